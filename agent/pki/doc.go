// Package pki makes and keeps the certificates of a cluster's node agents:
// one certificate authority per cluster, one server certificate per node
// and one client certificate for the controller, all ECDSA P-256 with
// random 128-bit serial numbers.
//
//	ca, err := pki.NewCA("openctl dev CA")                  // valid 10 years
//	srv, err := ca.IssueServer("dev-cp-0", []net.IP{ip})    // SANs: name + IPs, EKU ServerAuth, 1 year
//	cli, err := ca.IssueClient(pki.ControllerName)          // EKU ClientAuth, 1 year
//	err = pki.WriteFiles("/etc/openctl-agent", map[string][]byte{
//		pki.CACertFile:     pki.NewBundle(ca.Cert).PEM(),
//		pki.ServerCertFile: srv.CertPEM(),
//		pki.ServerKeyFile:  srvKeyPEM,
//	})
//
// A server certificate carries the extended key usage ServerAuth only and a
// client certificate ClientAuth only, so neither can stand in for the
// other. The CA has path length zero: it signs leaves, never intermediate
// CAs. New certificates are backdated by [Backdate] to tolerate clock skew;
// [WithValidity] and [WithClock] change their lifetime and their clock.
//
// # Files
//
// [WriteFiles] writes PEM files with mode 0600 (creating the directory 0700)
// atomically: each goes to a temporary file that is synced and renamed over
// the name. [LoadCA], [LoadLeaf] and [LoadBundle] read them back and check
// them (a key must match its certificate; a bundle holds CA certificates
// only). Private keys are PKCS #8; CA, Leaf print without their keys.
//
// # Rotation
//
// Parties accept a [Bundle] of CAs rather than a single CA, so that a CA can
// be replaced without a flag day: [Rotate] introduces a new CA next to the
// old one, new leaves are issued from the new CA while both are accepted,
// and [Bundle.Without] then drops the old one, after which certificates it
// signed are rejected. ca.pem always holds the bundle.
//
// # Errors
//
// Bad input (an empty name, a malformed PEM file, a key that does not match
// its certificate) is reported with errcode.Invalid; a missing file with
// errcode.NotFound. Check them with errors.Is.
//
// Everything in this package is safe for concurrent use: CA, Leaf and
// Bundle are not changed after they are made.
package pki
