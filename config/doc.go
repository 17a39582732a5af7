// Package config reads the user's openctl configuration,
// ~/.openctl/config.yaml, and hands each part to what uses it: every
// provider's section to that provider's driver (registry.Driver), the
// state DSN to the state backends (state.Backends), the apply settings
// to the engine. It knows no provider. The reference CLI (package cli)
// uses it for every command; a program embedding openctl does the same:
//
//	cfg, warnings, err := config.Load("") // $OPENCTL_CONFIG, $OPENCTL_HOME/config.yaml or ~/.openctl/config.yaml
//	if err != nil { ... }                 // file:line:column: field: what is wrong
//	for _, w := range warnings { ... }    // e.g. a file holding secrets that others can read
//	dcfg, err := driver.DecodeConfig(cfg.Section(driver.Info().Name)) // any registry.Driver
//	dsn, err := cfg.StateDSN()            // file:~/.openctl/state unless configured
//
// # The file
//
//	providers:
//	  <provider>:                  # one section per provider, decoded by its driver
//	    default-context: lab
//	    contexts:
//	      lab: {...}               # the provider's endpoint settings
//	    credentials:
//	      lab-token: {...}         # named credentials contexts refer to
//	    defaults: {...}            # the provider's defaults for resources
//	state:
//	  dsn: file:~/.openctl/state   # or postgres://user@db:5432/openctl
//	apply:
//	  concurrency: 8               # default 4
//	plugins:
//	  timeout: 10m                 # one call of an exec plugin; default 5m
//
// Every provider section follows that layout (the seed's): a default
// context, contexts by name, credentials by name that contexts name, and
// defaults; what a context, credentials or defaults hold is the
// provider's own, documented with its driver. A driver decodes its
// section with [Section.Decode] into its own types and reports what
// Decode cannot check with [Section.Errorf], so that every message names
// the file, line, column and field path the same way. A section of a
// provider the program does not have is kept, unread.
//
// The file is decoded strictly: an unknown field (with a suggestion when
// it is a known one spelt otherwise), a key set twice or a value of the
// wrong type is an [*errcode.InputError] (Input "config") naming the
// file, line, column and field path,
// and every problem in the file is reported at once. Errors match
// errcode.Invalid. A missing file is an empty configuration. The state
// section's layout before DSNs (backend: file|postgres, dir:) still
// loads, with a warning saying how to write it as a DSN.
//
// # Secrets
//
// Secret fields are secret.Secret values: they print as "[redacted]"
// everywhere (fmt, JSON, YAML, slog), Decode refuses the placeholder
// "[redacted]" fed back from a redacted view, and no error or warning of
// this package holds a secret. Load warns when a file holding one inline
// is readable by others; a provider's *File fields keep secrets out of
// the configuration altogether. Save writes the file back as the user
// wrote it, with mode 0600.
//
// # The environment
//
// CI runners configure openctl without a file: OPENCTL_STATE_DSN names
// the state store, OPENCTL_APPLY_CONCURRENCY the concurrency,
// OPENCTL_PLUGIN_TIMEOUT the exec plugins' call timeout, and
// OPENCTL_HOME moves the configuration file and the state directory;
// each provider reads its own OPENCTL_<NAME>_* variables through its
// driver (registry.EnvConfigurer). LoadEnv takes the environment as a
// function so that tests and embedders can supply their own.
//
// # Concurrency
//
// A Config is a plain value, safe for concurrent reads; Save and
// UseContext modify it and must not run concurrently with other uses.
package config
