package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Paths inside a host.
const (
	hostdPath   = "/usr/lib/k3stest/k3stest-hostd" // the installed copy of this binary
	controlDir  = "/run/k3stest"                   // the supervisor's socket and notify sockets
	controlSock = controlDir + "/hostd.sock"
	journalDir  = "/var/log/journal/k3stest" // one text file per unit
	hostdLog    = "/var/log/k3stest-hostd.log"
)

// runInit is pid 1 of a host. It is started in fresh mount, UTS, IPC and
// PID namespaces, already inside the host's network namespace. It builds
// the host's file system view from the state directory (overlays of /etc,
// /usr and /var whose upper layers persist there; the host's own /root,
// /home, /var/log and /etc/systemd/system; fresh /run, /tmp, /proc and
// /sys), sets the hostname, starts the supervisor and reaps every orphan
// until the supervisor exits. When it dies the kernel kills everything
// else in the host.
func runInit(args []string) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	state := fs.String("state", "", "the host's state directory (outside the host)")
	flavour := fs.String("flavour", "systemd", "systemd or openrc")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "k3stest-hostd init: not pid 1 of a new PID namespace")
		return 1
	}
	if err := setupMounts(*state, *flavour); err != nil {
		fmt.Fprintf(os.Stderr, "k3stest-hostd init: %v\n", err)
		return 1
	}
	if b, err := os.ReadFile("/etc/hostname"); err == nil {
		if err := unix.Sethostname([]byte(strings.TrimSpace(string(b)))); err != nil {
			fmt.Fprintf(os.Stderr, "k3stest-hostd init: hostname: %v\n", err)
			return 1
		}
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	logf, err := os.OpenFile(hostdLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "k3stest-hostd init: %v\n", err)
		return 1
	}
	sup := exec.Command(hostdPath, "supervise", "-flavour", *flavour)
	sup.Stdout, sup.Stderr = logf, logf
	sup.Dir = "/"
	sup.Env = serviceEnv()
	if err := sup.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "k3stest-hostd init: start supervisor: %v\n", err)
		return 1
	}
	logf.Close()
	supPid := sup.Process.Pid
	for {
		// Reap everything that has exited; the supervisor's exit ends the host.
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
			if pid == supPid {
				fmt.Fprintf(os.Stderr, "k3stest-hostd init: supervisor exited: %v\n", ws)
				return 1
			}
		}
		switch <-sigs {
		case syscall.SIGTERM, syscall.SIGINT:
			_ = sup.Process.Signal(syscall.SIGTERM)
		}
	}
}

func setupMounts(state, flavour string) error {
	if state == "" || !filepath.IsAbs(state) {
		return errors.New("-state must be an absolute directory")
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	for _, d := range []string{"etc", "usr", "var"} {
		opts := fmt.Sprintf("lowerdir=/%s,upperdir=%s/%s/upper,workdir=%s/%s/work", d, state, d, state, d)
		if err := unix.Mount("overlay", "/"+d, "overlay", 0, opts); err != nil {
			return fmt.Errorf("overlay /%s: %w", d, err)
		}
	}
	binds := [][2]string{
		{"root", "/root"},
		{"home", "/home"},
		{"log", "/var/log"},
		{"systemd", "/etc/systemd/system"},
	}
	for _, b := range binds {
		if err := os.MkdirAll(b[1], 0o755); err != nil {
			return err
		}
		if err := unix.Mount(filepath.Join(state, b[0]), b[1], "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", b[1], err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("proc: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("sysfs: %w", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		return fmt.Errorf("/run: %w", err)
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("/tmp: %w", err)
	}
	dirs := []string{"/run/sshd", "/run/lock", controlDir, controlDir + "/notify", journalDir}
	if flavour == "openrc" {
		dirs = append(dirs, "/run/openrc")
	} else {
		dirs = append(dirs, "/run/systemd/system")
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// serviceEnv is the environment systemd gives a system service.
func serviceEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
	}
}
