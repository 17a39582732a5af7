package output

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

// PrintRecords writes state records (what "openctl state list" and "state
// show" print): Table — RESOURCE, APIVERSION, GENERATION, OWNER, CREATED,
// UPDATED, with "No resources recorded in the state." on o.Empty when
// there are none —, Name (kind/name lines), JSON or YAML (one record as an
// object, several as a list or documents). Secret values never appear:
// the names of a record's secrets are listed with [redacted] values.
func PrintRecords(w io.Writer, f Format, recs []*state.Record, o Options) error {
	switch f {
	case Table, "":
		empty := o.Empty
		if empty == nil {
			empty = w
		}
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		return recordTable(w, empty, recs, now())
	case Name:
		for _, r := range recs {
			if _, err := fmt.Fprintln(w, NameOf(r.ID())); err != nil {
				return err
			}
		}
		return nil
	case JSON, YAML:
		return writeRecords(w, string(f), recs)
	}
	return errcode.New(errcode.Invalid, fmt.Sprintf("output: records print as table, name, json or yaml, not %q", f))
}

// recordTable writes a table of records.
func recordTable(w, empty io.Writer, recs []*state.Record, now time.Time) error {
	if len(recs) == 0 {
		_, err := fmt.Fprintln(empty, "No resources recorded in the state.")
		return err
	}
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tAPIVERSION\tGENERATION\tOWNER\tCREATED\tUPDATED")
	for _, r := range recs {
		owner := "<none>"
		if r.Owner != nil {
			owner = r.Owner.Short()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.ID().Short(), r.APIVersion, r.Generation, owner,
			Age(now.Sub(r.CreatedAt)), Age(now.Sub(r.UpdatedAt)))
	}
	return tw.Flush()
}

// writeRecords writes records as JSON or YAML, secrets left out (a record
// listed raw has them sealed; one read whole names them, redacted).
func writeRecords(w io.Writer, format string, recs []*state.Record) error {
	docs := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		m, err := recordMap(r)
		if err != nil {
			return err
		}
		docs = append(docs, m)
	}
	if format == "json" {
		var v any = docs
		if len(docs) == 1 {
			v = docs[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// recordMap renders a record as a map, the names of its secret fields
// with [redacted] values.
func recordMap(r *state.Record) (map[string]any, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(r.Secrets) > 0 {
		sec := make(map[string]any, len(r.Secrets))
		for k := range r.Secrets {
			sec[k] = secret.Redacted
		}
		m["secrets"] = sec
	}
	return m, nil
}
