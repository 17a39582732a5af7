// Command openctl is the openctl command-line tool.
//
// Its first subcommand, sandbox, runs the Proxmox VE API simulator from
// github.com/openctl/openctl/proxmox/proxmoxtest as a process:
//
//	openctl sandbox --listen 127.0.0.1:0 --nodes 3
//
// prints one JSON line with the API URL, an API token and the certificate
// fingerprint, then serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
