package proxmoxtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
)

// Clone the seeded template with go-proxmox and watch the clone lock.
func Example() {
	srv, err := proxmoxtest.New(proxmoxtest.WithSpeed(20))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, secret := srv.Token()
	client := proxmox.NewClient(srv.URL(), proxmox.WithHTTPClient(srv.Client()), proxmox.WithAPIToken(id, secret))

	tmpl := client.NodeRef("pve1").VirtualMachineRef(9000)
	newid, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{Name: "web1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, _ := srv.VM(newid)
	fmt.Println(newid, "locked:", vm.Lock)
	if err := task.Wait(ctx, 10*time.Millisecond, 5*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	vm, _ = srv.VM(newid)
	fmt.Println(vm.Name, "locked:", vm.Lock != "")

	// Starting a template fails inside its task, as on Proxmox.
	task, _ = tmpl.Start(ctx)
	var failed *proxmox.TaskFailedError
	if errors.As(task.Wait(ctx, 10*time.Millisecond, 5*time.Second), &failed) {
		fmt.Println(failed.Type, "failed:", failed.ExitStatus)
	}
	// Output:
	// 100 locked: clone
	// web1 locked: false
	// qmstart failed: you can't start a vm if it's a template
}
