package standin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Main runs the stand-in with args (args[0] is the name it was run as) and
// returns the exit code. Run as kubectl (a link named kubectl) it is kubectl;
// otherwise the first argument picks the k3s command. ctx ends the server.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "standin: %v\n", err)
		return 1
	}
	v, err := ReadVersion(exe)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	setKubeVersion(v)

	name := filepath.Base(args[0])
	switch name {
	case "kubectl":
		return runKubectl(args[1:])
	case "crictl", "ctr":
		fmt.Fprintf(stderr, "%s: not available in the k3s stand-in\n", name)
		return 1
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return 1
	}
	switch args[1] {
	case "--version", "-v", "version":
		fmt.Fprint(stdout, v.String())
		return 0
	case "--help", "-h", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "kubectl":
		return runKubectl(args[2:])
	case "server":
		log := newLogger(stderr)
		cfg, err := ParseServerArgs(args[2:], os.LookupEnv)
		if err != nil {
			log.Error(err.Error())
			return 1
		}
		cfg.Version = v
		for _, w := range cfg.ConfigWarnings {
			log.Warn(w)
		}
		if err := RunServer(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			log.Log(context.Background(), levelFatal, err.Error())
			return 1
		}
		return 0
	case "agent":
		log := newLogger(stderr)
		cfg, err := ParseAgentArgs(args[2:], os.LookupEnv)
		if err != nil {
			log.Log(context.Background(), levelFatal, err.Error())
			return 1
		}
		cfg.Version = v
		if err := RunAgent(ctx, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			log.Log(context.Background(), levelFatal, err.Error())
			return 1
		}
		return 0
	case "token":
		log := newLogger(stderr)
		if len(args) < 3 {
			log.Log(context.Background(), levelFatal, "k3s token: missing command (create, list, delete, generate, rotate)")
			return 1
		}
		o, err := ParseTokenArgs(args[2], args[3:], os.LookupEnv)
		if err == nil {
			err = RunToken(ctx, args[2], o, stdout)
		}
		if err != nil {
			log.Log(context.Background(), levelFatal, err.Error())
			return 1
		}
		return 0
	case "certificate":
		log := newLogger(stderr)
		if len(args) < 3 || args[2] != "rotate" {
			log.Log(context.Background(), levelFatal, "k3s certificate: only 'rotate' is implemented by the stand-in")
			return 1
		}
		o, err := ParseCertRotateArgs(args[3:], os.LookupEnv)
		if err == nil {
			err = RotateCertificates(o, time.Now(), log)
		}
		if err != nil {
			log.Log(context.Background(), levelFatal, err.Error())
			return 1
		}
		return 0
	case "etcd-snapshot", "secrets-encrypt", "check-config", "crictl", "ctr":
		fmt.Fprintf(stderr, "k3s %s: not implemented by the stand-in yet\n", args[1])
		return 1
	}
	fmt.Fprintf(stderr, "k3s: unknown command %q\n%s", args[1], usage)
	return 1
}

const usage = `NAME:
   k3s - Kubernetes, but small and simple (openctl test stand-in)

USAGE:
   k3s [global options] command [command options] [arguments...]

COMMANDS:
   server   Run management server
   agent    Run node agent
   kubectl  Run kubectl
   token    Manage tokens (create, list, delete, generate, rotate)
   certificate rotate  Rotate the leaf certificates (k3s stopped)

GLOBAL OPTIONS:
   --version, -v  print the version
`

// levelFatal is logrus's fatal level: k3s logs it and exits 1.
const levelFatal = slog.Level(12)

// newLogger logs in logrus's text shape, as k3s does under systemd:
// time="…" level=info msg="…" (level=fatal before a fatal exit; logrus
// prints FATA[…] only on a terminal).
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.String("time", a.Value.Time().UTC().Format(time.RFC3339))
			case slog.LevelKey:
				if l, ok := a.Value.Any().(slog.Level); ok && l >= levelFatal {
					return slog.String("level", "fatal")
				}
				lvl := strings.ToLower(a.Value.String())
				if lvl == "warn" {
					lvl = "warning"
				}
				return slog.String("level", lvl)
			}
			return a
		},
	}))
}
