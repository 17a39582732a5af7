// Package output prints openctl resources and plans the way users of
// kubectl and Terraform expect: tables with per-kind columns, YAML and JSON
// that can be fed back to apply, "-o name", plans with field diffs and
// kubectl-describe-like views. A CLI's "get", "plan" and "describe"
// commands are thin wrappers around it, and an embedder gets the same
// output.
//
//	ref, err := reg.ResolveKind("services") // the kind's columns and secret fields
//	...
//	err = output.Print(os.Stdout, output.Wide, services, output.Options{
//		Kind:  ref.Kind,
//		Ages:  ages, // creation times from state records
//		Empty: os.Stderr,
//	})
//
// prints
//
//	NAME     ZONE     PORT   STATE     ADDRESS    REPLICAS   IMAGE        AGE
//	web-01   zone-a   8080   running   10.0.0.5   2          nginx:1.27   3h4m
//
// ExamplePrint, ExamplePrintPlan, ExampleWritePlanJSON and
// ExampleWritePlanMarkdown show the formats.
//
// # Tables
//
// A table has NAME, the kind's columns (registry.Kind.Columns) and AGE.
// The [Table] format shows the columns not marked Wide; [Wide] adds the
// wide ones after them, in their declared order. Columns are aligned with
// text/tabwriter and padded with three spaces, as kubectl's are. A value
// that is missing, null or empty reads "<none>"; lists are comma-joined and
// maps written as sorted k=v pairs; a path that runs into a value of the
// wrong type reads "<invalid>". AGE comes from [Options].Ages and reads
// like kubectl's ([Age]); without an entry it is "<unknown>". An empty list
// prints [NoResources], to [Options].Empty when set.
//
// # YAML, JSON and names
//
// YAML and JSON print the redacted resources, status included, as kubectl
// does: a list query is a List (apiVersion v1, kind List, items) even of
// one resource or none, a get by one name ([Options].Object) the object
// itself. Both decode back with [manifest.DecodeBytes], so "get -o yaml"
// can be edited and applied again. The [Name] format prints [NameOf] each
// resource: "service/web-01".
//
// # Plans: text, JSON and Markdown
//
// A plan prints in three formats ([PlanFormat], "plan -o" and "show -o";
// [RenderPlan] picks the writer): [WritePlan]'s Terraform-like text, the
// default; [WritePlanJSON]'s machine-readable report; and
// [WritePlanMarkdown]'s pull-request comment (a summary line, a table of
// the changes, a collapsed field diff per resource, the waves).
//
// The JSON report is a versioned document, apiVersion "openctl.io/v1",
// kind "PlanReport" ([PlanReport] decodes it), described by the JSON
// Schema (draft 2020-12) in output/schema/plan-report-v1.json
// ([PlanReportSchema], $id [PlanReportSchemaID]):
//
//	{
//	  "apiVersion": "openctl.io/v1",
//	  "kind": "PlanReport",
//	  "hasChanges": true,
//	  "summary": {"create": 1, "update": 1, "replace": 0, "delete": 0, "noop": 3},
//	  "waves": [[{"apiVersion": "...", "kind": "...", "name": "..."}, ...], ...],
//	  "resources": [{
//	    "id": {"apiVersion": "proxmox.openctl.io/v1", "kind": "VirtualMachine", "name": "web-01"},
//	    "action": "update",              // create, update, replace, delete, no-op
//	    "reasons": ["..."],
//	    "wave": 2,                       // 1-based index into waves
//	    "owner": {...},                  // the composite that planned it, if any
//	    "dependsOn": [{...}],            // its $ref targets
//	    "source": {"file": "vms.yaml", "line": 12},
//	    "fields": [{"path": "spec.cpu.cores", "op": "change", "old": 2, "new": 4}]
//	  }]
//	}
//
// A field's op is "add" (no "old"), "remove" (no "new") or "change"
// (both). Keys are written in this order, two-space indented, so one plan
// always gives the same bytes. Within openctl.io/v1 fields are only added
// (consumers ignore the ones they do not know); anything else gets a new
// apiVersion. The schema is checked against real engine output in the
// package's tests.
//
// # Secrets
//
// Nothing secret is printed: every path a kind lists in SecretFields and
// every [secret.Secret] value reads "[redacted]" (see [Redact]). Spec
// fields are not redacted by name in Print, so that output fed back to
// apply sets what was applied; printed plans, which are for reading (a
// saved plan file keeps its secrets sealed, not printed), also redact
// fields and map keys named like secrets ("password", "token", ...), in
// every plan format. The engine's read
// API (openctl.Engine.Inventory) gives recorded resources with their
// sealed secret spec fields reading "[redacted]", which apply takes as
// "keep the sealed value".
//
// # Concurrency
//
// The functions of this package are safe for concurrent use; they do not
// modify the resources and plans they are given.
package output
