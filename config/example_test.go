package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/openctl/openctl/config"
	"github.com/openctl/openctl/secret"
)

// A driver decodes its provider's section, providers.<name>, into its own
// struct: strictly, with file paths expanded, and with errors that name
// the file, line, column and field.
func ExampleNewSection() {
	// The driver's configuration: the layout every provider section
	// follows.
	type Context struct {
		Endpoint string `yaml:"endpoint"`
		Root     string `yaml:"root" openctl:"path"` // relative to the file
		Token    string `yaml:"token"`
	}
	type Credentials struct {
		Token secret.Secret `yaml:"token"`
	}
	type FilesConfig struct {
		DefaultContext string                  `yaml:"default-context"`
		Contexts       map[string]*Context     `yaml:"contexts"`
		Credentials    map[string]*Credentials `yaml:"credentials"`
	}

	sec, err := config.NewSection("files", "/home/ann/.openctl/config.yaml", []byte(`
default-context: lab
contexts:
  lab:
    endpoint: https://files.lab:8443
    root: data/lab
credentials:
  lab:
    token: s3cret
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var cfg FilesConfig
	if err := sec.Decode(&cfg); err != nil {
		fmt.Println(err)
		return
	}
	lab := cfg.Contexts[cfg.DefaultContext]
	fmt.Println(lab.Endpoint, lab.Root, cfg.Credentials["lab"].Token)
	// What Decode cannot check, the driver reports with Errorf.
	fmt.Println(sec.Errorf("contexts.lab.credentials", "required: the name of an entry of %s.credentials", sec.Path()))

	// A typo.
	sec, _ = config.NewSection("files", "/home/ann/.openctl/config.yaml", []byte(`
contexts:
  lab:
    endpont: https://files.lab:8443
`))
	fmt.Println(sec.Decode(&cfg))
	// Output:
	// https://files.lab:8443 /home/ann/.openctl/data/lab [redacted]
	// /home/ann/.openctl/config.yaml:4:3: providers.files.contexts.lab.credentials: required: the name of an entry of providers.files.credentials
	// /home/ann/.openctl/config.yaml:4:5: providers.files.contexts.lab.endpont: unknown field (known: endpoint, root, token)
}

// Load the configuration file and hand a provider its section.
func Example() {
	dir, err := os.MkdirTemp("", "openctl-config")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(path, []byte(`
providers:
  files:
    default-context: lab
    contexts:
      lab:
        endpoint: https://files.lab:8443
state:
  dsn: postgres://openctl@db.example:5432/openctl
apply:
  concurrency: 8
`), 0o600)

	cfg, warnings, err := config.Load(path)
	if err != nil {
		fmt.Println(err) // file:line:column: field: what is wrong
		return
	}
	fmt.Println("warnings:", len(warnings))
	fmt.Println("providers:", cfg.ProviderNames())
	fmt.Println("concurrency:", cfg.Concurrency())
	dsn, _ := cfg.StateDSN()
	fmt.Println("state:", dsn)

	var files struct {
		DefaultContext string                       `yaml:"default-context"`
		Contexts       map[string]map[string]string `yaml:"contexts"`
	}
	if err := cfg.Section("files").Decode(&files); err != nil { // in the files provider's driver
		fmt.Println(err)
		return
	}
	fmt.Println("files:", files.DefaultContext, files.Contexts["lab"]["endpoint"])
	// Output:
	// warnings: 0
	// providers: [files]
	// concurrency: 8
	// state: postgres://openctl@db.example:5432/openctl
	// files: lab https://files.lab:8443
}
