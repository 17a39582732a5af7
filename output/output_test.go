package output_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/registry"
	"github.com/openctl/openctl/secret"
)

const apiVersion = "demo.openctl.io/v1"

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// svcKind is the Service kind of a made-up provider, with columns of
// each shape: plain and nested fields, numbers, lists, wide columns
// declared among the others.
var svcKind = registry.Kind{
	Kind: "Service", Plural: "services", ShortNames: []string{"svc"},
	SecretFields: []string{"status.password", "status.join.token"},
	Columns: []registry.Column{
		{Name: "ZONE", Field: "status.zone"}, {Name: "PORT", Field: "status.port"},
		{Name: "CPU", Field: "spec.resources.cpu", Wide: true},
		{Name: "STATE", Field: "status.state"}, {Name: "ADDRESS", Field: "status.address"},
		{Name: "MEMORY", Field: "spec.resources.memory", Wide: true},
		{Name: "IMAGE", Field: "spec.image", Wide: true},
	},
}

func svc(name string, spec, status map[string]any) *manifest.Resource {
	return &manifest.Resource{APIVersion: apiVersion, Kind: "Service", Metadata: manifest.Metadata{Name: name}, Spec: spec, Status: status}
}

func fixtures() ([]*manifest.Resource, map[manifest.ID]time.Time) {
	web1 := svc("web-01",
		map[string]any{"resources": map[string]any{"cpu": int64(2), "memory": int64(4096)}, "image": "nginx:1.27"},
		map[string]any{"zone": "zone-a", "port": int64(8080), "state": "running", "address": "10.0.0.5"})
	web2 := svc("web-02",
		map[string]any{"resources": map[string]any{"cpu": int64(4)}, "image": "httpd:2.4"},
		map[string]any{"zone": "zone-b", "port": int64(8081), "state": "stopped", "address": []any{"10.0.0.6", "fd00::6"}})
	db := svc("db", map[string]any{"resources": map[string]any{"cpu": 1.5}}, nil)
	ages := map[manifest.ID]time.Time{
		web1.ID(): now.Add(-(3*time.Hour + 4*time.Minute + 10*time.Second)),
		web2.ID(): now.Add(-45 * time.Second),
	}
	return []*manifest.Resource{web1, web2, db}, ages
}

func print(t *testing.T, f output.Format, rs []*manifest.Resource, o output.Options) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, output.Print(&b, f, rs, o))
	return b.String()
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want output.Format
	}{{"", output.Table}, {"table", output.Table}, {"wide", output.Wide}, {" YAML ", output.YAML}, {"json", output.JSON}, {"name", output.Name}} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := output.ParseFormat(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, f)
		})
	}
	_, err := output.ParseFormat("jsonpath")
	require.ErrorIs(t, err, errcode.Invalid)
	assert.EqualError(t, err, `output: unknown format "jsonpath": want one of table, wide, yaml, json, name (INVALID_REQUEST)`)
}

func TestPrintTable(t *testing.T) {
	rs, ages := fixtures()
	o := output.Options{Kind: svcKind, Ages: ages, Now: clock}
	for _, tc := range []struct {
		name string
		f    output.Format
		o    output.Options
		want string
	}{
		{"table", output.Table, o, "" +
			"NAME     ZONE     PORT     STATE     ADDRESS            AGE\n" +
			"web-01   zone-a   8080     running   10.0.0.5           3h4m\n" +
			"web-02   zone-b   8081     stopped   10.0.0.6,fd00::6   45s\n" +
			"db       <none>   <none>   <none>    <none>             <unknown>\n"},
		{"empty format is table", "", o, "" +
			"NAME     ZONE     PORT     STATE     ADDRESS            AGE\n" +
			"web-01   zone-a   8080     running   10.0.0.5           3h4m\n" +
			"web-02   zone-b   8081     stopped   10.0.0.6,fd00::6   45s\n" +
			"db       <none>   <none>   <none>    <none>             <unknown>\n"},
		{"wide", output.Wide, o, "" +
			"NAME     ZONE     PORT     STATE     ADDRESS            CPU   MEMORY   IMAGE        AGE\n" +
			"web-01   zone-a   8080     running   10.0.0.5           2     4096     nginx:1.27   3h4m\n" +
			"web-02   zone-b   8081     stopped   10.0.0.6,fd00::6   4     <none>   httpd:2.4    45s\n" +
			"db       <none>   <none>   <none>    <none>             1.5   <none>   <none>       <unknown>\n"},
		{"no headers", output.Table, output.Options{Kind: svcKind, Ages: ages, Now: clock, NoHeaders: true}, "" +
			"web-01   zone-a   8080     running   10.0.0.5           3h4m\n" +
			"web-02   zone-b   8081     stopped   10.0.0.6,fd00::6   45s\n" +
			"db       <none>   <none>   <none>    <none>             <unknown>\n"},
		{"no kind: name and age", output.Table, output.Options{Ages: ages, Now: clock}, "" +
			"NAME     AGE\n" +
			"web-01   3h4m\n" +
			"web-02   45s\n" +
			"db       <unknown>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, print(t, tc.f, rs, tc.o))
		})
	}
}

func TestPrintTableCells(t *testing.T) {
	kind := registry.Kind{Kind: "Thing", Columns: []registry.Column{
		{Name: "EMPTY", Field: "status.empty"}, {Name: "NULL", Field: "status.null"},
		{Name: "MAP", Field: "status.map"}, {Name: "BAD", Field: "status.ip.v4"},
		{Name: "CTRL", Field: "status.ctrl"}, {Name: "BOOL", Field: "status.ok"},
	}}
	r := &manifest.Resource{APIVersion: apiVersion, Kind: "Thing", Metadata: manifest.Metadata{Name: "t"}, Status: map[string]any{
		"empty": "", "null": nil, "map": map[string]any{"b": int64(2), "a": "x"}, "ip": "10.0.0.1",
		"ctrl": "a\tb\x1b[31mc", "ok": true,
	}}
	got := print(t, output.Table, []*manifest.Resource{r}, output.Options{Kind: kind, NoHeaders: true})
	assert.Equal(t, "t     <none>   <none>   a=x,b=2   <invalid>   a b?[31mc   true   <unknown>\n", got)
}

func TestPrintMixedKinds(t *testing.T) {
	rs, _ := fixtures()
	vol := &manifest.Resource{APIVersion: apiVersion, Kind: "Volume", Metadata: manifest.Metadata{Name: "data"}}
	got := print(t, output.Table, []*manifest.Resource{rs[0], vol}, output.Options{})
	assert.Equal(t, "NAME             AGE\nservice/web-01   <unknown>\nvolume/data      <unknown>\n", got)
}

func TestPrintEmpty(t *testing.T) {
	for _, f := range []output.Format{output.Table, output.Wide, output.Name} {
		t.Run(string(f)+" to w", func(t *testing.T) {
			assert.Equal(t, "No resources found.\n", print(t, f, nil, output.Options{}))
		})
		t.Run(string(f)+" to Empty", func(t *testing.T) {
			var errw bytes.Buffer
			assert.Equal(t, "", print(t, f, nil, output.Options{Empty: &errw}))
			assert.Equal(t, "No resources found.\n", errw.String())
		})
	}
	assert.Equal(t, "apiVersion: v1\nkind: List\nitems: []\n", print(t, output.YAML, nil, output.Options{}))
	assert.Equal(t, "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": []\n}\n", print(t, output.JSON, nil, output.Options{}))
	for _, f := range []output.Format{output.YAML, output.JSON} {
		rs, err := manifest.DecodeBytes([]byte(print(t, f, nil, output.Options{Object: true})), "-")
		require.NoError(t, err)
		assert.Empty(t, rs, "Object with nothing to print is an empty List")
	}
}

func TestPrintName(t *testing.T) {
	rs, _ := fixtures()
	assert.Equal(t, "service/web-01\nservice/web-02\nservice/db\n", print(t, output.Name, rs, output.Options{Kind: svcKind}))
}

func TestPrintErrors(t *testing.T) {
	var b bytes.Buffer
	err := output.Print(&b, "xml", nil, output.Options{})
	require.ErrorIs(t, err, errcode.Invalid)
	err = output.Print(&b, output.YAML, []*manifest.Resource{nil}, output.Options{})
	require.ErrorIs(t, err, errcode.Invalid)
	assert.Empty(t, b.String())

	boom := errors.New("disk full")
	err = output.Print(failWriter{boom}, output.Table, []*manifest.Resource{svc("a", nil, nil)}, output.Options{})
	require.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "output: print table")
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestPrintRoundTrip(t *testing.T) {
	rs, _ := fixtures()
	for _, tc := range []struct {
		f      output.Format
		rs     []*manifest.Resource
		object bool
		start  string
	}{
		{output.YAML, rs[:1], false, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: demo.openctl.io/v1\n"},
		{output.YAML, rs[:1], true, "apiVersion: demo.openctl.io/v1\n"},
		{output.YAML, rs, false, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: demo.openctl.io/v1\n"},
		{output.YAML, rs, true, "apiVersion: v1\nkind: List\n"},
		{output.JSON, rs[:1], false, "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n"},
		{output.JSON, rs[:1], true, "{\n  \"apiVersion\": \"demo.openctl.io/v1\",\n"},
		{output.JSON, rs, false, "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n"},
	} {
		t.Run(fmt.Sprintf("%s/%d/object=%v", tc.f, len(tc.rs), tc.object), func(t *testing.T) {
			out := print(t, tc.f, tc.rs, output.Options{Kind: svcKind, Object: tc.object})
			assert.True(t, strings.HasPrefix(out, tc.start), out)
			back, err := manifest.DecodeBytes([]byte(out), "out")
			require.NoError(t, err)
			require.Len(t, back, len(tc.rs))
			for i, r := range back {
				assert.Equal(t, tc.rs[i].ID(), r.ID())
				assert.True(t, manifest.Equal(tc.rs[i].Spec, r.Spec), "spec %d: %v", i, r.Spec)
				assert.True(t, manifest.Equal(tc.rs[i].Status, r.Status), "status %d: %v", i, r.Status)
			}
		})
	}
}

func TestPrintRedactsSecrets(t *testing.T) {
	const pw, tok, key = "hunter2", "demo-join-token", "ssh-private-key"
	r := svc("web-01",
		map[string]any{"resources": map[string]any{"cpu": int64(2)}},
		map[string]any{
			"zone": "zone-a", "password": pw, "address": "10.0.0.5",
			"join": map[string]any{"token": tok, "server": "https://10.0.0.5:8443"},
			"keys": map[string]secret.Secret{"root": secret.New(key)},
			"list": []any{secret.New(key), "plain"},
		})
	kind := svcKind
	kind.Columns = append(kind.Columns, registry.Column{Name: "PASSWORD", Field: "status.password"}, registry.Column{Name: "JOIN", Field: "status.join"})
	for _, f := range output.Formats() {
		t.Run(string(f), func(t *testing.T) {
			out := print(t, f, []*manifest.Resource{r}, output.Options{Kind: kind})
			for _, s := range []string{pw, tok, key} {
				assert.NotContains(t, out, s)
			}
			if f != output.Name {
				assert.Contains(t, out, "[redacted]")
				assert.Contains(t, out, "10.0.0.5")
			}
			if f == output.YAML || f == output.JSON {
				back, err := manifest.DecodeBytes([]byte(out), "out")
				require.NoError(t, err)
				st := back[0].Status
				assert.Equal(t, "[redacted]", st["password"])
				assert.Equal(t, map[string]any{"token": "[redacted]", "server": "https://10.0.0.5:8443"}, st["join"])
				assert.Equal(t, map[string]any{"root": "[redacted]"}, st["keys"])
				assert.Equal(t, []any{"[redacted]", "plain"}, st["list"])
				assert.Equal(t, r.Spec, back[0].Spec)
			}
		})
	}
	// The resource printed is not modified.
	assert.Equal(t, pw, r.Status["password"])
	assert.Equal(t, tok, r.Status["join"].(map[string]any)["token"])
}

func TestRedact(t *testing.T) {
	s := secret.New("x")
	r := svc("a", map[string]any{"p": &s, "n": nil}, map[string]any{"absent": nil})
	c := output.Redact(r, []string{"status.missing", "status.absent", "status.absent.deeper", "spec"})
	assert.Equal(t, map[string]any{"p": "[redacted]", "n": nil}, c.Spec)
	assert.Equal(t, map[string]any{"absent": nil}, c.Status)
	assert.Same(t, &s, r.Spec["p"])
	assert.Nil(t, output.Redact(nil, nil))
}

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-5 * time.Second, "<invalid>"},
		{-1500 * time.Millisecond, "0s"},
		{0, "0s"},
		{45 * time.Second, "45s"},
		{119 * time.Second, "119s"},
		{5*time.Minute + 30*time.Second, "5m30s"},
		{5 * time.Minute, "5m"},
		{12 * time.Minute, "12m"},
		{150 * time.Minute, "150m"},
		{3*time.Hour + 4*time.Minute, "3h4m"},
		{7 * time.Hour, "7h"},
		{20 * time.Hour, "20h"},
		{5*24*time.Hour + 4*time.Hour, "5d4h"},
		{5 * 24 * time.Hour, "5d"},
		{45 * 24 * time.Hour, "45d"},
		{(2*365 + 100) * 24 * time.Hour, "2y100d"},
		{2 * 365 * 24 * time.Hour, "2y"},
		{9 * 365 * 24 * time.Hour, "9y"},
	} {
		t.Run(tc.want, func(t *testing.T) { assert.Equal(t, tc.want, output.Age(tc.d)) })
	}
}

func TestNames(t *testing.T) {
	id := manifest.ID{APIVersion: apiVersion, Kind: "Service", Name: "web-01"}
	assert.Equal(t, "service/web-01", output.NameOf(id))
	names := output.KindNames([]registry.Kind{svcKind, {Kind: "Zone"}})
	assert.Equal(t, "svc/web-01", names(id))
	assert.Equal(t, "zone/zone-a", names(manifest.ID{Kind: "Zone", Name: "zone-a"}))
}

// TestPrintJSONShape checks JSON is a List for a list query, of one
// resource too, and the object itself for a get by one name.
func TestPrintJSONShape(t *testing.T) {
	rs, _ := fixtures()
	var list struct {
		APIVersion, Kind string
		Items            []map[string]any
	}
	for _, n := range []int{0, 1, 3} {
		require.NoError(t, json.Unmarshal([]byte(print(t, output.JSON, rs[:n], output.Options{})), &list))
		assert.Equal(t, "v1", list.APIVersion)
		assert.Equal(t, "List", list.Kind)
		assert.Len(t, list.Items, n)
	}
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(print(t, output.JSON, rs[:1], output.Options{Object: true})), &one))
	assert.Equal(t, "Service", one["kind"])
}
