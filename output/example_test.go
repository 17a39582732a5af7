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
		Kind:         "Service",
		SecretFields: []string{"status.password"},
		Columns: []registry.Column{
			{Name: "ZONE", Field: "status.zone"},
			{Name: "ADDRESS", Field: "status.address"},
			{Name: "REPLICAS", Field: "spec.replicas", Wide: true},
		},
	}
	web := &manifest.Resource{
		APIVersion: "demo.openctl.io/v1", Kind: "Service",
		Metadata: manifest.Metadata{Name: "web-01"},
		Spec:     map[string]any{"image": "nginx:1.27", "replicas": int64(2)},
		Status:   map[string]any{"zone": "zone-a", "address": []any{"10.0.0.5", "fd00::5"}, "password": "hunter2"},
	}
	db := &manifest.Resource{APIVersion: "demo.openctl.io/v1", Kind: "Service", Metadata: manifest.Metadata{Name: "db"}}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	o := output.Options{
		Kind: kind,
		Ages: map[manifest.ID]time.Time{web.ID(): now.Add(-3*time.Hour - 4*time.Minute)},
		Now:  func() time.Time { return now },
	}
	_ = output.Print(os.Stdout, output.Wide, []*manifest.Resource{web, db}, o)
	byName := o
	byName.Object = true // a get by one name prints the object, not a List
	_ = output.Print(os.Stdout, output.YAML, []*manifest.Resource{web}, byName)
	_ = output.Print(os.Stdout, output.Name, []*manifest.Resource{web, db}, o)
	// Output:
	// NAME     ZONE     ADDRESS            REPLICAS   AGE
	// web-01   zone-a   10.0.0.5,fd00::5   2          3h4m
	// db       <none>   <none>             <none>     <unknown>
	// apiVersion: demo.openctl.io/v1
	// kind: Service
	// metadata:
	//   name: web-01
	// spec:
	//   image: nginx:1.27
	//   replicas: 2
	// status:
	//   address:
	//     - 10.0.0.5
	//     - fd00::5
	//   password: "[redacted]"
	//   zone: zone-a
	// service/web-01
	// service/db
}

func ExamplePrintPlan() {
	id := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: name}
	}
	p := &openctl.Plan{
		Changes: []openctl.Change{
			{ID: id("web-01"), Action: openctl.ActionCreate, Reasons: []string{"does not exist"}},
			{ID: id("web-02"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.replicas", Old: int64(2), New: int64(4)},
				{Path: "spec.admin.password", Old: "old", New: "new"},
			}},
			{ID: id("db"), Action: openctl.ActionNoOp},
		},
		Waves: [][]manifest.ID{{id("db")}, {id("web-01"), id("web-02")}},
	}
	_ = output.PrintPlan(os.Stdout, p, false)
	// Output:
	//   + service/web-01 will be created
	//       # does not exist
	//   ~ service/web-02 will be updated in place
	//       ~ spec.replicas: 2 → 4
	//       ~ spec.admin.password: [redacted] → [redacted]
	//
	// Wave 1: service/db
	// Wave 2: service/web-01, service/web-02
	//
	// Plan: 1 to create, 1 to update, 0 to replace, 0 to delete, 1 unchanged.
}

func ExampleWritePlanJSON() {
	id := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: name}
	}
	p := &openctl.Plan{
		Changes: []openctl.Change{
			{ID: id("web-01"), Action: openctl.ActionUpdate, Reasons: []string{"image change takes effect after a restart"},
				Fields: []manifest.FieldChange{
					{Path: "spec.replicas", Old: int64(2), New: int64(4)},
					{Path: "spec.admin.password", Old: "old", New: "new"},
				}},
		},
		Waves: [][]manifest.ID{{id("web-01")}},
	}
	_ = output.WritePlanJSON(os.Stdout, p)
	// Output:
	// {
	//   "apiVersion": "openctl.io/v1",
	//   "kind": "PlanReport",
	//   "hasChanges": true,
	//   "summary": {
	//     "create": 0,
	//     "update": 1,
	//     "replace": 0,
	//     "delete": 0,
	//     "noop": 0
	//   },
	//   "waves": [
	//     [
	//       {
	//         "apiVersion": "demo.openctl.io/v1",
	//         "kind": "Service",
	//         "name": "web-01"
	//       }
	//     ]
	//   ],
	//   "resources": [
	//     {
	//       "id": {
	//         "apiVersion": "demo.openctl.io/v1",
	//         "kind": "Service",
	//         "name": "web-01"
	//       },
	//       "action": "update",
	//       "reasons": [
	//         "image change takes effect after a restart"
	//       ],
	//       "wave": 1,
	//       "dependsOn": [],
	//       "fields": [
	//         {
	//           "path": "spec.replicas",
	//           "op": "change",
	//           "old": 2,
	//           "new": 4
	//         },
	//         {
	//           "path": "spec.admin.password",
	//           "op": "change",
	//           "old": "[redacted]",
	//           "new": "[redacted]"
	//         }
	//       ]
	//     }
	//   ]
	// }
}

func ExampleWritePlanMarkdown() {
	id := func(name string) manifest.ID {
		return manifest.ID{APIVersion: "demo.openctl.io/v1", Kind: "Service", Name: name}
	}
	p := &openctl.Plan{
		Changes: []openctl.Change{
			{ID: id("web-01"), Action: openctl.ActionCreate, Reasons: []string{"does not exist"}},
			{ID: id("web-02"), Action: openctl.ActionUpdate, Fields: []manifest.FieldChange{
				{Path: "spec.replicas", Old: int64(2), New: int64(4)},
			}},
			{ID: id("db"), Action: openctl.ActionNoOp},
		},
		Waves: [][]manifest.ID{{id("db")}, {id("web-01"), id("web-02")}},
	}
	_ = output.WritePlanMarkdown(os.Stdout, p, output.PlanOptions{})
	// Output:
	// ### openctl plan
	//
	// **Plan: 1 to create, 1 to update, 0 to replace, 0 to delete, 1 unchanged.**
	//
	// | Action | Resource | Wave | Reasons |
	// |---|---|---|---|
	// | ➕ create | `service/web-01` | 2 | does not exist |
	// | 🔄 update | `service/web-02` | 2 |  |
	//
	// <details>
	// <summary><code>service/web-02</code> 🔄 update: 1 changed field</summary>
	//
	// ```diff
	// - spec.replicas: 2
	// + spec.replicas: 4
	// ```
	//
	// </details>
	//
	// #### Waves
	//
	// 1. `service/db`
	// 2. `service/web-01`, `service/web-02`
}
