package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openctl/openctl/secret"
)

// The environment variables of the overlay LoadEnv applies.
const (
	EnvProxmoxURL             = "OPENCTL_PROXMOX_URL"
	EnvProxmoxTokenID         = "OPENCTL_PROXMOX_TOKEN_ID"
	EnvProxmoxTokenSecret     = "OPENCTL_PROXMOX_TOKEN_SECRET"
	EnvProxmoxTokenSecretFile = "OPENCTL_PROXMOX_TOKEN_SECRET_FILE"
	EnvProxmoxFingerprint     = "OPENCTL_PROXMOX_FINGERPRINT"
	EnvProxmoxNode            = "OPENCTL_PROXMOX_NODE"
	EnvStateDSN               = "OPENCTL_STATE_DSN"
	EnvApplyConcurrency       = "OPENCTL_APPLY_CONCURRENCY"
)

// EnvContext is the name of the context (and credentials) the environment
// overlay defines from OPENCTL_PROXMOX_URL and friends.
const EnvContext = "env"

// ProviderProxmox is the name of the Proxmox provider's section.
const ProviderProxmox = "proxmox"

// overlay records what applyEnv changed and what the file had there, so
// that Save writes the file's values back rather than the environment's.
type overlay struct {
	proxmox     bool         // the "env" context was set
	newProvider bool         // the proxmox section did not exist before
	envCtx      *Context     // the context applyEnv set
	envCreds    *Credentials // the credentials applyEnv set
	fileCtx     *Context     // the file's "env" context, nil if none
	fileCreds   *Credentials // the file's "env" credentials, nil if none
	fileDefault string       // the file's default-context
	state       bool         // OPENCTL_STATE_DSN was applied
	envState    State        // the State applyEnv set
	fileState   State        // the file's State
	concurrency bool         // OPENCTL_APPLY_CONCURRENCY was applied
	envConc     int          // the concurrency applyEnv set
	fileConc    int          // the file's concurrency
}

// applyEnv applies the environment overlay (see LoadEnv).
func (c *Config) applyEnv(getenv func(string) string) error {
	ov := &overlay{}
	var errs []*Error

	url := getenv(EnvProxmoxURL)
	set := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if getenv(n) != "" {
				out = append(out, n)
			}
		}
		return out
	}
	if url == "" {
		if others := set(EnvProxmoxTokenID, EnvProxmoxTokenSecret, EnvProxmoxTokenSecretFile, EnvProxmoxFingerprint, EnvProxmoxNode); len(others) > 0 {
			errs = append(errs, &Error{Msg: fmt.Sprintf("%s %s set but %s is not: set it to the Proxmox VE API URL (https://pve.example.com:8006), or unset %s",
				strings.Join(others, ", "), isAre(len(others)), EnvProxmoxURL, strings.Join(others, ", "))})
		}
	} else {
		var missing []string
		if getenv(EnvProxmoxTokenID) == "" {
			missing = append(missing, EnvProxmoxTokenID)
		}
		tokenSecret, tokenFile := getenv(EnvProxmoxTokenSecret), getenv(EnvProxmoxTokenSecretFile)
		switch {
		case tokenSecret == "" && tokenFile == "":
			missing = append(missing, EnvProxmoxTokenSecret+" (or "+EnvProxmoxTokenSecretFile+")")
		case tokenSecret != "" && tokenFile != "":
			errs = append(errs, &Error{Msg: fmt.Sprintf("both %s and %s are set: set only one", EnvProxmoxTokenSecret, EnvProxmoxTokenSecretFile)})
		}
		if len(missing) > 0 {
			errs = append(errs, &Error{Msg: fmt.Sprintf("%s is set but %s %s not: set %s to the API token (user@realm!name and its secret)",
				EnvProxmoxURL, strings.Join(missing, " and "), isAre(len(missing)), pronoun(len(missing)))})
		}
		if len(errs) == 0 {
			ov.proxmox = true
			p := c.Providers[ProviderProxmox]
			if p == nil {
				ov.newProvider = true
				p = &Provider{}
				if c.Providers == nil {
					c.Providers = map[string]*Provider{}
				}
				c.Providers[ProviderProxmox] = p
			}
			ov.fileCtx, ov.fileCreds, ov.fileDefault = p.Contexts[EnvContext], p.Credentials[EnvContext], p.DefaultContext
			ov.envCtx = &Context{
				Endpoint:    url,
				Node:        getenv(EnvProxmoxNode),
				Credentials: EnvContext,
				Fingerprint: getenv(EnvProxmoxFingerprint),
			}
			ov.envCreds = &Credentials{
				TokenID:         getenv(EnvProxmoxTokenID),
				TokenSecret:     secret.New(tokenSecret),
				TokenSecretFile: expandHome(tokenFile, getenv),
			}
			if p.Contexts == nil {
				p.Contexts = map[string]*Context{}
			}
			if p.Credentials == nil {
				p.Credentials = map[string]*Credentials{}
			}
			p.Contexts[EnvContext] = ov.envCtx
			p.Credentials[EnvContext] = ov.envCreds
			p.DefaultContext = EnvContext
		}
	}

	if dsn := getenv(EnvStateDSN); dsn != "" {
		ov.state, ov.fileState = true, c.State
		c.State.Backend = BackendPostgres
		c.State.DSN = secret.New(dsn)
		ov.envState = c.State
	}

	if v := getenv(EnvApplyConcurrency); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			shown := v
			if len(shown) > 20 {
				shown = shown[:20] + "..."
			}
			errs = append(errs, &Error{Msg: fmt.Sprintf("%s: want a positive integer, got %q", EnvApplyConcurrency, shown)})
		} else {
			ov.concurrency, ov.fileConc, ov.envConc = true, c.Apply.Concurrency, n
			c.Apply.Concurrency = n
		}
	}

	if err := joinErrors(errs); err != nil {
		return err
	}
	if ov.proxmox || ov.state || ov.concurrency {
		c.meta.env = ov
	}
	return nil
}

// undo returns the providers and state to write for c: c's, with what the
// overlay set (and the program has not changed since) replaced by what
// the file had. It does not modify c.
func (ov *overlay) undo(c *Config) (map[string]*Provider, State, Apply) {
	providers, st, ap := c.Providers, c.State, c.Apply
	if ov == nil {
		return providers, st, ap
	}
	if ov.proxmox {
		if p := providers[ProviderProxmox]; p != nil {
			cp := p.clone()
			// Compare the entries of p: cp's are copies.
			if p.Contexts[EnvContext] == ov.envCtx {
				restore(cp.Contexts, ov.fileCtx)
			}
			if p.Credentials[EnvContext] == ov.envCreds {
				restore(cp.Credentials, ov.fileCreds)
			}
			if cp.DefaultContext == EnvContext {
				cp.DefaultContext = ov.fileDefault
			}
			providers = cloneMap(providers)
			if ov.newProvider && len(cp.Contexts) == 0 && len(cp.Credentials) == 0 && len(cp.Defaults) == 0 && cp.DefaultContext == "" {
				delete(providers, ProviderProxmox)
			} else {
				providers[ProviderProxmox] = cp
			}
		}
	}
	if ov.state && st.Backend == ov.envState.Backend && st.DSN.Equal(ov.envState.DSN) {
		st.Backend, st.DSN = ov.fileState.Backend, ov.fileState.DSN
	}
	if ov.concurrency && ap.Concurrency == ov.envConc {
		ap.Concurrency = ov.fileConc
	}
	return providers, st, ap
}

// restore puts the file's entry back under EnvContext, or removes it.
func restore[T any](m map[string]*T, file *T) {
	if file != nil {
		m[EnvContext] = file
	} else {
		delete(m, EnvContext)
	}
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
