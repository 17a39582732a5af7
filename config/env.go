package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
)

// The environment variables of the overlay LoadEnv applies. Providers
// read their own, OPENCTL_<NAME>_* (registry.EnvConfigurer).
const (
	EnvStateDSN         = "OPENCTL_STATE_DSN"
	EnvApplyConcurrency = "OPENCTL_APPLY_CONCURRENCY"
	EnvPluginTimeout    = "OPENCTL_PLUGIN_TIMEOUT"
)

// overlay records what applyEnv changed.
type overlay struct {
	stateDSN    bool // OPENCTL_STATE_DSN was applied
	concurrency bool // OPENCTL_APPLY_CONCURRENCY was applied
	timeout     bool // OPENCTL_PLUGIN_TIMEOUT was applied
}

// applyEnv applies the environment overlay (see LoadEnv).
func (c *Config) applyEnv(getenv func(string) string) error {
	ov := &overlay{}
	if dsn := getenv(EnvStateDSN); dsn != "" {
		ov.stateDSN = true
		c.State.DSN = secret.New(dsn)
	}
	if v := getenv(EnvApplyConcurrency); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			shown := v
			if len(shown) > 20 {
				shown = shown[:20] + "..."
			}
			return inputError(errcode.InputError{Msg: fmt.Sprintf("%s: want a positive integer, got %q", EnvApplyConcurrency, shown)})
		}
		ov.concurrency = true
		c.Apply.Concurrency = n
	}
	if v := getenv(EnvPluginTimeout); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			shown := v
			if len(shown) > 20 {
				shown = shown[:20] + "..."
			}
			return inputError(errcode.InputError{Msg: fmt.Sprintf("%s: want a positive duration like 30s or 10m, got %q", EnvPluginTimeout, shown)})
		}
		ov.timeout = true
		c.Plugins.Timeout = d
	}
	if ov.stateDSN || ov.concurrency || ov.timeout {
		c.meta.env = ov
	}
	return nil
}
