// pause: the sandbox ("pause") container of the local stack's real node. It holds the Pod's
// namespaces open, reaps the zombies of a shared PID namespace, and exits 0 on SIGINT or SIGTERM,
// as Kubernetes' own pause does. Built static (CGO_ENABLED=0) into an image FROM scratch by
// test/harness/bins/build.sh, since no registry can be pulled from here.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	children := make(chan os.Signal, 8)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
