// Command soaksandbox serves a sandbox to the K3s soak test of
// cmd/openctl from a process of its own, built without the race detector
// (the simulator, the hosts and their k3s are the heavy part of a trial):
// the Proxmox VE simulator and the VMs' hosts, as `openctl sandbox` serves
// them, and a view of what is really there for the test's checks.
//
//	soaksandbox -config-out FILE -seed N -speed F
//
// writes FILE (an openctl configuration for the sandbox), prints one JSON
// line {"view": URL} on stdout, and serves until its standard input is
// closed. GET URL answers {"vms": [{"name", "node", "running"}], "etcd":
// {cluster ID: [node, ...]}}: the simulator's VMs (templates left out) and
// each k3s cluster's etcd members.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/sandbox"
)

// View is what GET answers.
type View struct {
	VMs  []VM                `json:"vms"`
	Etcd map[string][]string `json:"etcd"`
}

// VM is one of the simulator's VMs.
type VM struct {
	Name    string `json:"name"`
	Node    string `json:"node"`
	Running bool   `json:"running"`
}

func main() {
	configOut := flag.String("config-out", "", "write the openctl configuration here")
	seed := flag.Int64("seed", 1, "the simulator's seed")
	speed := flag.Float64("speed", 8, "divide the simulated latencies by this")
	flag.Parse()
	if err := run(*configOut, *seed, *speed); err != nil {
		fmt.Fprintln(os.Stderr, "soaksandbox:", err)
		os.Exit(1)
	}
}

func run(configOut string, seed int64, speed float64) error {
	srv, err := sandbox.StartServer(sandbox.ServerOptions{Listen: "127.0.0.1:0", Simulator: append(
		proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage), proxmoxtest.WithSeed(seed), proxmoxtest.WithSpeed(speed))})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.WriteConfig(configOut); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			v := View{VMs: []VM{}, Etcd: srv.World().EtcdMembers()}
			for _, vm := range srv.Simulator().VMs() {
				if !vm.Template {
					v.VMs = append(v.VMs, VM{Name: vm.Name, Node: vm.Node, Running: vm.Running})
				}
			}
			_ = json.NewEncoder(w).Encode(v)
		}))
	}()
	line, err := json.Marshal(map[string]string{"view": "http://" + l.Addr().String() + "/"})
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it, or dies
	return nil
}
