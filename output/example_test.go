package output_test

import (
	"os"
	"time"

	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/output"
	"github.com/openctl/openctl/registry"
)

func ExamplePrint() {
	kind := registry.Kind{
		Kind:         "VirtualMachine",
		SecretFields: []string{"status.password"},
		Columns: []registry.Column{
			{Name: "NODE", Field: "status.node"},
			{Name: "IP", Field: "status.ip"},
			{Name: "CPU", Field: "spec.cpu.cores", Wide: true},
		},
	}
	web := &manifest.Resource{
		APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine",
		Metadata: manifest.Metadata{Name: "web-01"},
		Spec:     map[string]any{"cpu": map[string]any{"cores": int64(2)}},
		Status:   map[string]any{"node": "pve-1", "ip": []any{"10.0.0.5", "fd00::5"}, "password": "hunter2"},
	}
	db := &manifest.Resource{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Metadata: manifest.Metadata{Name: "db"}}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	o := output.Options{
		Kind: kind,
		Ages: map[manifest.ID]time.Time{web.ID(): now.Add(-3*time.Hour - 4*time.Minute)},
		Now:  func() time.Time { return now },
	}
	_ = output.Print(os.Stdout, output.Wide, []*manifest.Resource{web, db}, o)
	_ = output.Print(os.Stdout, output.YAML, []*manifest.Resource{web}, o)
	_ = output.Print(os.Stdout, output.Name, []*manifest.Resource{web, db}, o)
	// Output:
	// NAME     NODE     IP                 CPU      AGE
	// web-01   pve-1    10.0.0.5,fd00::5   2        3h4m
	// db       <none>   <none>             <none>   <unknown>
	// apiVersion: proxmox.openctl.io/v1
	// kind: VirtualMachine
	// metadata:
	//   name: web-01
	// spec:
	//   cpu:
	//     cores: 2
	// status:
	//   ip:
	//     - 10.0.0.5
	//     - fd00::5
	//   node: pve-1
	//   password: "[redacted]"
	// virtualmachine/web-01
	// virtualmachine/db
}

func ExamplePrintPlan() {
	id := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "proxmox.openctl.io/v1", Kind: "VirtualMachine", Name: name}
	}
	p := &openctl.Plan{
		Changes: []openctl.Change{
			{ID: id("web-01"), Action: openctl.ActionCreate, Reasons: []string{"does not exist"}},
			{ID: id("web-02"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.cpu.cores", Old: int64(2), New: int64(4)},
				{Path: "spec.cloudInit.password", Old: "old", New: "new"},
			}},
			{ID: id("db"), Action: openctl.ActionNoOp},
		},
		Waves: [][]manifest.ID{{id("db")}, {id("web-01"), id("web-02")}},
	}
	_ = output.PrintPlan(os.Stdout, p, false)
	// Output:
	//   + virtualmachine/web-01 will be created
	//       # does not exist
	//   ~ virtualmachine/web-02 will be updated in place
	//       ~ spec.cpu.cores: 2 → 4
	//       ~ spec.cloudInit.password: [redacted] → [redacted]
	//
	// Wave 1: virtualmachine/db
	// Wave 2: virtualmachine/web-01, virtualmachine/web-02
	//
	// Plan: 1 to create, 1 to update, 0 to replace, 0 to delete, 1 unchanged.
}
