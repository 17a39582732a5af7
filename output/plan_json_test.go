package output_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/refs"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/registry/providertest"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with testdata/golden/name, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./output -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), got, "golden file %s (go test ./output -update rewrites it)", path)
}

// planSchema compiles the embedded JSON Schema of the plan report.
func planSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(output.PlanReportSchema()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(output.PlanReportSchemaID, doc))
	sch, err := c.Compile(output.PlanReportSchemaID)
	require.NoError(t, err)
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, doc []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err, "not JSON: %s", doc)
	return sch.Validate(inst)
}

const labAV = "lab.openctl.io/v1"

// labProvider serves Node (secret field spec.auth.password), Pool (a
// composite of spec.count Nodes named <pool>-<i>) and Disk, which a
// Diff says must be replaced when spec.size shrinks.
type labProvider struct{ *providertest.Fake }

func (p labProvider) Kinds() []registry.Kind {
	return []registry.Kind{
		{Kind: "Node", Plural: "nodes", SecretFields: []string{"spec.auth.password"}},
		{Kind: "Pool", Plural: "pools", Composite: true},
		{Kind: "Disk", Plural: "disks"},
	}
}

func (p labProvider) Plan(_ context.Context, r *manifest.Resource) ([]*manifest.Resource, error) {
	n, _ := r.Spec["count"].(int64)
	var out []*manifest.Resource
	for i := range n {
		out = append(out, lab("Node", fmt.Sprintf("%s-%d", r.Metadata.Name, i), map[string]any{"index": i}))
	}
	return out, nil
}

func (p labProvider) Diff(_ context.Context, desired, live *manifest.Resource) (registry.Diff, error) {
	fields := manifest.Diff("spec", live.Spec, desired.Spec)
	if len(fields) == 0 {
		return registry.Diff{Action: registry.DiffNone}, nil
	}
	if desired.Kind == "Disk" {
		if ds, ls := desired.Spec["size"].(int64), live.Spec["size"].(int64); ds < ls {
			return registry.Diff{Action: registry.DiffReplace, Fields: fields, Reasons: []string{"a disk cannot shrink: a new one is created"}}, nil
		}
	}
	return registry.Diff{Action: registry.DiffUpdate, Fields: fields}, nil
}

func lab(kind, name string, spec map[string]any) *manifest.Resource {
	return &manifest.Resource{APIVersion: labAV, Kind: kind, Metadata: manifest.Metadata{Name: name}, Spec: spec,
		Source: manifest.Source{File: "lab.yaml", Line: 1}}
}

func labEngine(t *testing.T) *openctl.Engine {
	t.Helper()
	store := state.NewMemory(state.MemoryPassphrase(func() (secret.Secret, error) { return secret.New("test passphrase"), nil }))
	e, err := openctl.New(
		openctl.WithProviders(labProvider{providertest.NewFake("lab", "Node", "Pool", "Disk")}),
		openctl.WithStore(store),
		openctl.WithRetry(backoff.Policy{Initial: 1e6, Max: 5e6}),
	)
	require.NoError(t, err)
	return e
}

// labManifests is a first generation of the lab, and the second one
// that changes each resource in a different way.
func labManifests(gen int) []*manifest.Resource {
	nodeID := manifest.ID{APIVersion: labAV, Kind: "Node", Name: "db"}
	if gen == 1 {
		return []*manifest.Resource{
			lab("Node", "db", map[string]any{"cpu": int64(2), "auth": map[string]any{"user": "ops", "password": "first-hunter2"},
				"env": map[string]any{"API_TOKEN": "tok-first"}, "tags": []any{"db"}, "note": "gone soon"}),
			lab("Disk", "data", map[string]any{"size": int64(100), "node": refs.Marker(nodeID, "status.observedHash")}),
			lab("Disk", "scratch", map[string]any{"size": int64(20)}),
			lab("Pool", "workers", map[string]any{"count": int64(3)}),
		}
	}
	return []*manifest.Resource{
		lab("Node", "db", map[string]any{"cpu": int64(4), "auth": map[string]any{"user": "ops", "password": "second-hunter2"},
			"env": map[string]any{"API_TOKEN": "tok-second"}, "tags": []any{"db", "primary"}, "labels": map[string]any{"tier": "<data> | `x`"}}),
		lab("Disk", "data", map[string]any{"size": int64(50), "node": refs.Marker(nodeID, "status.observedHash")}),
		lab("Disk", "scratch", map[string]any{"size": int64(10)}),
		lab("Pool", "workers", map[string]any{"count": int64(2)}),
	}
}

// labPlans runs the engine: a plan of an empty lab, the plan of the
// second generation after applying the first, and a plan with no changes
// after applying the second.
func labPlans(t *testing.T) map[string]*openctl.Plan {
	t.Helper()
	ctx := t.Context()
	e := labEngine(t)
	plans := map[string]*openctl.Plan{}
	var err error
	plans["create"], err = e.Plan(ctx, labManifests(1)...)
	require.NoError(t, err)
	_, err = e.Apply(ctx, labManifests(1)...)
	require.NoError(t, err)
	plans["change"], err = e.Plan(ctx, labManifests(2)...)
	require.NoError(t, err)
	_, err = e.Apply(ctx, labManifests(2)...)
	require.NoError(t, err)
	plans["none"], err = e.Plan(ctx, labManifests(2)...)
	require.NoError(t, err)
	plans["sample"] = samplePlan()
	plans["empty"] = &openctl.Plan{}
	return plans
}

func TestPlanJSONValidatesAgainstSchema(t *testing.T) {
	sch := planSchema(t)
	for name, p := range labPlans(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, output.WritePlanJSON(&b, p))
			require.NoError(t, validate(t, sch, b.Bytes()), "%s", b.String())
			for _, s := range []string{"hunter2", "tok-first", "tok-second", "old-pw", "new-pw"} {
				assert.NotContains(t, b.String(), s, "a secret in clear")
			}

			var r output.PlanReport
			dec := json.NewDecoder(&b)
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&r))
			assert.Equal(t, "openctl.io/v1", r.APIVersion)
			assert.Equal(t, "PlanReport", r.Kind)
			assert.Equal(t, p.HasChanges(), r.HasChanges)
			require.Len(t, r.Resources, len(p.Changes))
			for i, c := range p.Changes {
				assert.Equal(t, c.ID, r.Resources[i].ID)
				assert.Equal(t, c.Action, r.Resources[i].Action)
				assert.Len(t, r.Resources[i].Fields, len(c.Fields))
			}
			assert.Len(t, r.Waves, len(p.Waves))
		})
	}
}

func TestPlanJSONOfEngineRuns(t *testing.T) {
	plans := labPlans(t)
	report := func(name string) *output.PlanReport {
		r, err := output.NewPlanReport(plans[name])
		require.NoError(t, err)
		return r
	}
	byName := func(r *output.PlanReport) map[string]output.PlanResource {
		m := map[string]output.PlanResource{}
		for _, res := range r.Resources {
			m[res.ID.Kind+"/"+res.ID.Name] = res
		}
		return m
	}

	r := report("create")
	assert.True(t, r.HasChanges)
	assert.Equal(t, output.PlanSummary{Create: 7}, r.Summary) // db, data, scratch, workers and workers-0..2
	res := byName(r)
	assert.Equal(t, []string{"does not exist"}, res["Node/db"].Reasons)
	assert.Equal(t, []manifest.ID{{APIVersion: labAV, Kind: "Node", Name: "db"}}, res["Disk/data"].DependsOn)
	assert.Greater(t, res["Disk/data"].Wave, res["Node/db"].Wave, "a resource runs after what it depends on")
	assert.Equal(t, &output.PlanSource{File: "lab.yaml", Line: 1}, res["Node/db"].Source)
	require.NotNil(t, res["Node/workers-0"].Owner)
	assert.Equal(t, "workers", res["Node/workers-0"].Owner.Name)

	r = report("change")
	res = byName(r)
	assert.Equal(t, openctl.ActionReplace, res["Disk/scratch"].Action)
	assert.Equal(t, []string{"a disk cannot shrink: a new one is created"}, res["Disk/scratch"].Reasons)
	assert.Equal(t, openctl.ActionUpdate, res["Disk/data"].Action)
	assert.Equal(t, []string{"values from Node/db are known only after apply"}, res["Disk/data"].Reasons)
	assert.Equal(t, openctl.ActionDelete, res["Node/workers-2"].Action)
	fields := map[string]output.PlanField{}
	for _, f := range res["Node/db"].Fields {
		fields[f.Path] = f
	}
	assert.Equal(t, output.PlanField{Path: "spec.cpu", Op: "change", Old: json.RawMessage("2"), New: json.RawMessage("4")}, fields["spec.cpu"])
	assert.Equal(t, output.PlanField{Path: "spec.auth.password", Op: "change", Old: json.RawMessage(`"[redacted]"`), New: json.RawMessage(`"[redacted]"`)}, fields["spec.auth.password"])
	assert.Equal(t, output.PlanField{Path: "spec.env.API_TOKEN", Op: "change", Old: json.RawMessage(`"[redacted]"`), New: json.RawMessage(`"[redacted]"`)}, fields["spec.env.API_TOKEN"])
	assert.Equal(t, output.PlanField{Path: "spec.note", Op: "remove", Old: json.RawMessage(`"gone soon"`)}, fields["spec.note"])
	assert.Equal(t, output.PlanField{Path: "spec.labels", Op: "add", New: json.RawMessage("{\"tier\":\"<data> | `x`\"}")}, fields["spec.labels"])

	r = report("none")
	assert.False(t, r.HasChanges)
	assert.Equal(t, 0, r.Summary.Create+r.Summary.Update+r.Summary.Replace+r.Summary.Delete)
	assert.Positive(t, r.Summary.NoOp)
}

// TestPlanJSONSchemaRejects makes sure the schema is not vacuous: each
// of these documents breaks one rule of it.
func TestPlanJSONSchemaRejects(t *testing.T) {
	sch := planSchema(t)
	var b bytes.Buffer
	require.NoError(t, output.WritePlanJSON(&b, samplePlan()))
	require.NoError(t, validate(t, sch, b.Bytes()))

	for name, mutate := range map[string]func(doc map[string]any){
		"no summary":          func(doc map[string]any) { delete(doc, "summary") },
		"other apiVersion":    func(doc map[string]any) { doc["apiVersion"] = "openctl.io/v2" },
		"unknown top field":   func(doc map[string]any) { doc["extra"] = true },
		"unknown action":      func(doc map[string]any) { resource(doc, 1)["action"] = "destroy" },
		"wave 0":              func(doc map[string]any) { resource(doc, 1)["wave"] = 0 },
		"reasons not strings": func(doc map[string]any) { resource(doc, 1)["reasons"] = []any{1} },
		"id without name":     func(doc map[string]any) { delete(resource(doc, 1)["id"].(map[string]any), "name") },
		"add with old":        func(doc map[string]any) { field(doc, 2, 5)["old"] = "x" },
		"remove with new":     func(doc map[string]any) { field(doc, 2, 3)["new"] = "x" },
		"change without new":  func(doc map[string]any) { delete(field(doc, 2, 2), "new") },
		"unknown op":          func(doc map[string]any) { field(doc, 2, 2)["op"] = "replace" },
		"negative count":      func(doc map[string]any) { doc["summary"].(map[string]any)["create"] = -1 },
		"wave of names":       func(doc map[string]any) { doc["waves"] = []any{[]any{"service/web-01"}} },
	} {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
			mutate(doc)
			bad, err := json.Marshal(doc)
			require.NoError(t, err)
			assert.Error(t, validate(t, sch, bad))
		})
	}
}

func resource(doc map[string]any, i int) map[string]any {
	return doc["resources"].([]any)[i].(map[string]any)
}

func field(doc map[string]any, i, j int) map[string]any {
	return resource(doc, i)["fields"].([]any)[j].(map[string]any)
}

func TestPlanJSONGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, output.WritePlanJSON(&b, samplePlan()))
	golden(t, "plan.json", b.String())
	for range 10 {
		var again bytes.Buffer
		require.NoError(t, output.WritePlanJSON(&again, samplePlan()))
		require.Equal(t, b.String(), again.String(), "the same plan gives the same bytes")
	}
}

func TestPlanJSONSecretsNested(t *testing.T) {
	p := &openctl.Plan{Changes: []openctl.Change{{ID: svcID("vault"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
		{Path: "spec.config", Old: map[string]any{"keys": []any{secret.New("k1"), map[string]any{"inner": secret.New("k2")}}},
			New: map[string]string{"apiToken": "k3", "plain": "ok"}},
		{Path: "spec.list", New: []secret.Secret{secret.New("k4")}, Added: true},
		{Path: "spec.secretName", Old: "k5", Removed: true},
	}}}}
	var b bytes.Buffer
	require.NoError(t, output.WritePlanJSON(&b, p))
	for _, s := range []string{"k1", "k2", "k3", "k4", "k5"} {
		assert.NotContains(t, b.String(), `"`+s+`"`)
	}
	r, err := output.NewPlanReport(p)
	require.NoError(t, err)
	f := r.Resources[0].Fields
	assert.JSONEq(t, `{"keys":["[redacted]",{"inner":"[redacted]"}]}`, string(f[0].Old))
	assert.JSONEq(t, `{"apiToken":"[redacted]","plain":"ok"}`, string(f[0].New))
	assert.JSONEq(t, `["[redacted]"]`, string(f[1].New))
	assert.JSONEq(t, `"[redacted]"`, string(f[2].Old))
	require.NoError(t, validate(t, planSchema(t), b.Bytes()))
}

func TestPlanJSONErrors(t *testing.T) {
	var b bytes.Buffer
	require.ErrorIs(t, output.WritePlanJSON(&b, nil), errcode.Invalid)
	err := output.WritePlanJSON(&b, &openctl.Plan{Changes: []openctl.Change{{ID: svcID("a"), Action: "explode"}}})
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), `action "explode"`)
	err = output.WritePlanJSON(&b, &openctl.Plan{Changes: []openctl.Change{{ID: svcID("a"), Action: openctl.ActionUpdate,
		Fields: []manifest.FieldChange{{Path: "spec.ch", New: make(chan int), Added: true}}}}})
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Empty(t, b.String(), "nothing is written on error")
}

func TestRenderPlanFormats(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want output.PlanFormat
	}{{"", output.PlanText}, {"text", output.PlanText}, {" JSON ", output.PlanJSON}, {"markdown", output.PlanMarkdown}, {"md", output.PlanMarkdown}} {
		f, err := output.ParsePlanFormat(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, f, tc.in)
	}
	_, err := output.ParsePlanFormat("yaml")
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Contains(t, err.Error(), "text, json, markdown")

	p := samplePlan()
	for f, write := range map[output.PlanFormat]func(*bytes.Buffer) error{
		output.PlanText:     func(b *bytes.Buffer) error { return output.WritePlan(b, p, output.PlanOptions{}) },
		output.PlanJSON:     func(b *bytes.Buffer) error { return output.WritePlanJSON(b, p) },
		output.PlanMarkdown: func(b *bytes.Buffer) error { return output.WritePlanMarkdown(b, p, output.PlanOptions{}) },
	} {
		var want, got bytes.Buffer
		require.NoError(t, write(&want))
		require.NoError(t, output.RenderPlan(&got, f, p, output.PlanOptions{}))
		assert.Equal(t, want.String(), got.String(), f)
	}
	var b bytes.Buffer
	require.ErrorIs(t, output.RenderPlan(&b, "JSON", p, output.PlanOptions{}), errcode.Invalid)
	assert.True(t, strings.HasPrefix(output.PlanSummaryLine(p), "Plan: 1 to create"))
}
