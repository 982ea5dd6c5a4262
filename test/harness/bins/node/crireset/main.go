// crireset stops and removes every Pod sandbox (and so every container) of a CRI runtime, the
// way the kubelet would: StopPodSandbox tears down the Pod's network through CNI and removes its
// network namespace, RemovePodSandbox deletes its containers. The local stack's `down` runs it
// against its own containerd before stopping it, so no network namespace, veth, mount or shim is
// left behind.
//
// Usage: crireset UNIX_SOCKET_PATH. Prints one line per sandbox; exits 1 if any step failed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crireset UNIX_SOCKET_PATH")
		os.Exit(2)
	}
	conn, err := grpc.NewClient("unix://"+os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crireset:", err)
		os.Exit(1)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crireset: list pod sandboxes:", err)
		os.Exit(1)
	}
	failed := false
	for _, s := range list.Items {
		name := s.Metadata.GetNamespace() + "/" + s.Metadata.GetName()
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "crireset: stop %s (%s): %v\n", name, s.Id, err)
			failed = true
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "crireset: remove %s (%s): %v\n", name, s.Id, err)
			failed = true
			continue
		}
		fmt.Printf("removed %s %s\n", name, s.Id)
	}
	if failed {
		os.Exit(1)
	}
}
