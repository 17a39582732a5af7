package apischema_test

import (
	"fmt"
	"sort"

	"github.com/openctl/openctl/proxmox/proxmoxtest/internal/apischema"
)

// cloneSchema is an excerpt of apidoc.js (Proxmox VE 9): the clone
// method's required parameters and one optional one. Tests read the whole
// file from the openctl shared/ directory; this example stands alone.
const cloneSchema = `const apiSchema = [{"path": "/nodes", "children": [{"path": "/nodes/{node}", "children": [
  {"path": "/nodes/{node}/qemu/{vmid}/clone", "info": {"POST": {"name": "clone_vm", "parameters": {
    "additionalProperties": 0,
    "properties": {
      "node":  {"type": "string", "format": "pve-node"},
      "vmid":  {"type": "integer", "format": "pve-vmid", "minimum": 100, "maximum": 999999999},
      "newid": {"type": "integer", "format": "pve-vmid", "minimum": 100, "maximum": 999999999},
      "full":  {"type": "boolean", "optional": 1}
    }}}}}]}]}];`

func ExampleOperation_Validate() {
	s, err := apischema.Parse([]byte(cloneSchema))
	if err != nil {
		fmt.Println(err)
		return
	}
	op, ok := s.Lookup("POST", "/api2/json/nodes/pve1/qemu/abc/clone")
	if !ok {
		fmt.Println("not in the schema")
		return
	}
	fmt.Println(op.Method, op.Path, op.PathParams)
	errs := op.Validate(map[string]string{"full": "true"})
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("%s: %s\n", name, errs[name])
	}
	// Output:
	// POST /nodes/{node}/qemu/{vmid}/clone map[node:pve1 vmid:abc]
	// full: type check ('boolean') failed - got 'true'
	// newid: property is missing and it is not optional
	// vmid: type check ('integer') failed - got 'abc'
}
