// Package config reads and writes the user's openctl configuration,
// ~/.openctl/config.yaml, and turns it into what the rest of openctl
// takes: a proxmox.Config, a state.Store, an apply concurrency. The
// reference CLI uses it for --context, `openctl config view |
// use-context | get-contexts` and its state commands; a program embedding
// openctl gets the same behaviour:
//
//	cfg, warnings, err := config.Load("") // $OPENCTL_CONFIG, $OPENCTL_HOME/config.yaml or ~/.openctl/config.yaml
//	if err != nil { ... }                 // file:line: field: what is wrong
//	for _, w := range warnings { ... }    // e.g. a file holding secrets that others can read
//	pcfg, err := cfg.Proxmox("")          // or a --context override
//	prov, err := proxmox.New(pcfg)
//	st, closeStore, err := cfg.OpenStore(ctx)
//
// # The file
//
//	providers:
//	  proxmox:
//	    default-context: lab
//	    contexts:
//	      lab:
//	        endpoint: https://pve.lab:8006
//	        node: pve1
//	        credentials: lab-token
//	        fingerprint: "AB:CD:..."   # or caFile: /path, or insecureSkipVerify: true
//	    credentials:
//	      lab-token:
//	        tokenId: root@pam!openctl
//	        tokenSecretFile: ~/.openctl/secrets/lab.token   # or tokenSecret: "..."
//	    defaults:
//	      storage: local-lvm
//	      bridge: vmbr0
//	state:
//	  backend: file           # file (the default) or postgres
//	  dir: ~/.openctl/state   # file backend; default $OPENCTL_HOME/state or ~/.openctl/state
//	  dsn: postgres://...     # postgres backend
//	apply:
//	  concurrency: 8          # default 4
//
// The file is decoded strictly: an unknown field, a key set twice or a
// value of the wrong type is an *Error naming the file, line, column and
// field path, and every problem in the file is reported at once. Errors
// match errcode.Invalid. A missing file is an empty configuration.
//
// # Secrets
//
// Token secrets and the DSN are secret.Secret values: they print as
// "[redacted]" everywhere (fmt, JSON, YAML, slog), no error or warning of
// this package holds one, and Redacted returns a copy fit for display.
// Only Save writes them, into a file of mode 0600. Load warns when a file
// holding a secret is readable by others; tokenSecretFile keeps the
// secret out of the configuration altogether.
//
// # The environment
//
// CI runners configure openctl without a file: OPENCTL_PROXMOX_URL,
// OPENCTL_PROXMOX_TOKEN_ID and OPENCTL_PROXMOX_TOKEN_SECRET define a
// Proxmox context named "env" that becomes the default, OPENCTL_STATE_DSN
// selects the PostgreSQL state, OPENCTL_APPLY_CONCURRENCY the concurrency,
// and OPENCTL_HOME moves the configuration file and the state directory.
// LoadEnv documents them all; it takes the environment as a function so
// that tests and embedders can supply their own.
//
// # Concurrency
//
// A Config is a plain value, safe for concurrent reads; Save and
// UseContext modify it and must not run concurrently with other uses.
package config
