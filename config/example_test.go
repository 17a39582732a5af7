package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/openctl/openctl/config"
)

// Load a configuration file and turn it into the Proxmox provider's
// configuration.
func Example() {
	dir, _ := os.MkdirTemp("", "openctl-config")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(path, []byte(`
providers:
  proxmox:
    default-context: lab
    contexts:
      lab:
        endpoint: https://pve.lab:8006
        node: pve1
        credentials: lab-token
      prod:
        endpoint: https://pve.prod:8006
        credentials: prod-token
    credentials:
      lab-token:
        tokenId: root@pam!openctl
        tokenSecret: 3f0b8e1c-0000-4000-8000-000000000001
      prod-token:
        tokenId: ci@pve!openctl
        tokenSecretFile: secrets/prod.token
    defaults:
      storage: local-lvm
      bridge: vmbr0
`), 0o600)

	cfg, warnings, err := config.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("warnings:", len(warnings))
	for _, c := range cfg.Contexts("proxmox") {
		fmt.Printf("context %s current=%v endpoint=%s\n", c.Name, c.Current, c.Endpoint)
	}

	pcfg, err := cfg.Proxmox("") // "" = the default context; or a --context flag
	if err != nil {
		fmt.Println(err)
		return
	}
	lab := pcfg.Contexts["lab"]
	fmt.Println("default:", pcfg.DefaultContext)
	fmt.Println("lab token:", lab.TokenID, lab.TokenSecret, lab.Defaults.Storage)
	fmt.Println("prod secret file relative to the config:", pcfg.Contexts["prod"].TokenSecretFile == filepath.Join(dir, "secrets/prod.token"))
	fmt.Println("concurrency:", cfg.Concurrency())
	// Output:
	// warnings: 0
	// context lab current=true endpoint=https://pve.lab:8006
	// context prod current=false endpoint=https://pve.prod:8006
	// default: lab
	// lab token: root@pam!openctl [redacted] local-lvm
	// prod secret file relative to the config: true
	// concurrency: 4
}
