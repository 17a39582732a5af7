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
// ExamplePrint and ExamplePrintPlan show the table and plan formats.
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
// YAML and JSON are [manifest.EncodeYAML] and [manifest.EncodeJSON] of the
// redacted resources, status included: their output decodes back with
// [manifest.DecodeBytes], so "get -o yaml" can be edited and applied again.
// Several resources are a "---"-separated YAML stream or a JSON array (the
// decoder does not read a kubectl-style List object). The [Name] format
// prints [NameOf] each resource: "service/web-01".
//
// # Secrets
//
// Nothing secret is printed: every path a kind lists in SecretFields and
// every [secret.Secret] value reads "[redacted]" (see [Redact]). Spec
// fields are not redacted by name in Print, so that output fed back to
// apply sets what was applied; plans, which are never applied, also redact
// fields named like secrets ("password", "token", ...). The engine's read
// API (openctl.Engine.Inventory) gives recorded resources with their
// sealed secret spec fields reading "[redacted]", which apply takes as
// "keep the sealed value".
//
// # Concurrency
//
// The functions of this package are safe for concurrent use; they do not
// modify the resources and plans they are given.
package output
