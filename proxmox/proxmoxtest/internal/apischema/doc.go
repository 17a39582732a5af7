// Package apischema loads the Proxmox VE API-viewer data (apidoc.js) and
// checks request parameters against it the way Proxmox VE's own
// PVE::JSONSchema does, so tests can prove that the simulator in
// proxmox/proxmoxtest accepts and rejects what real Proxmox VE does.
//
// It is test-support code: the schema file itself is AGPL-3.0 reference data
// kept outside the repository (../shared/proxmox-api/apidoc.js.gz) and is
// read at test time, never embedded.
//
//	s, err := apischema.Load("../../../shared/proxmox-api/apidoc.js.gz")
//	op, ok := s.Lookup("POST", "/nodes/pve1/qemu/100/clone")
//	errs := op.Validate(map[string]string{"newid": "abc"})
//	// errs["newid"] == "type check ('integer') failed - got 'abc'"
//
// # Fidelity
//
// Validate follows check_prop/check_type/check_object in pve-common
// src/PVE/JSONSchema.pm: one message per parameter, checks in Proxmox's order
// (missing, type, format, pattern, maxLength, minLength, maximum, minimum,
// enum), the same message texts ("invalid format - ..." keeps the newline
// of Proxmox's die), booleans only as "0"/"1" (a JSON true/false
// in a request body must be turned into "1"/"0" by the caller, as
// pve-http-server does), integers as [+-]?\d+, unknown parameters refused
// when the method's schema says additionalProperties: 0, and "requires".
//
// What is approximated, and why:
//   - Named formats: pve-vmid, pve-node, pve-configid, pve-storage-id,
//     pve-bridge-id, pve-iface, pve-tag, mac-addr, ipv4, ipv6, ip, address,
//     CIDR, CIDRv4, CIDRv6, ipv4mask, dns-name, urlencoded, disk-size,
//     pve-startup-order, pve-task-status-type, pve-ipv4-config,
//     pve-ipv6-config, qemu-server's pve-qm-ipconfig, and their "-list" and
//     "-opt" forms are checked with Proxmox's rules and messages (IP
//     addresses with Go's net/netip instead of Proxmox's IPV4RE/IPV6RE).
//     Every other named format (pve-poolid, pve-userid, pve-qm-boot, ...)
//     is accepted: the viewer data does not define them.
//   - Property-string formats (a format given as an object, e.g. net[n],
//     scsi[n], agent, memory) are parsed as parse_property_string does
//     (key=value parts, the default key, aliases and keyAlias, booleans
//     via parse_boolean) and each key is checked like a parameter; the
//     validator callbacks Proxmox attaches to some formats are not run.
//   - Indexed parameters ("net[n]", "scsi[n]", ...) accept any decimal
//     index; the viewer data does not say how many each has.
//   - Patterns are Perl regular expressions anchored as Proxmox does
//     (m/^$pattern$/, with qr's "(?^:" rewritten to "(?:"); a pattern Go's
//     regexp cannot compile is not checked (Schema.UncheckedPatterns lists
//     them: two, with repeat counts above RE2's limit of 1000).
//   - oneOf / type-property (a few SDN fabric methods) and array-typed
//     parameters are not checked.
package apischema
