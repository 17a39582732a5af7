package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/plugin"
)

// A plugin is any executable: this one is three lines of sh.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "openctl-hello")
	os.WriteFile(path, []byte(`#!/bin/sh
[ "$1" = --capabilities ] && exec echo '{"providerName":"hello","protocolVersion":"1.0","resources":[{"kind":"Greeting","actions":["get"]}]}'
echo '{"status":"success","resource":{"metadata":{"name":"world"},"status":{"text":"hello, world"}}}'
`), 0o755)

	ctx := context.Background()
	p, err := plugin.Load(ctx, path, plugin.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	prov := plugin.New(p, nil, plugin.Options{})
	r, err := prov.Get(ctx, manifest.ID{APIVersion: "hello.openctl.io/v1", Kind: "Greeting", Name: "world"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prov.Name(), r.Status["text"])
	// Output: hello hello, world
}
