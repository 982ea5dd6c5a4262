// Command coredns is CoreDNS with only the plugins the real node's cluster DNS uses: kubernetes
// (answers *.svc.cluster.local from the API), cache, errors, log, health, ready and bind. No
// forward plugin is linked, so no query can ever leave the machine. CoreDNS's own main imports
// core/plugin, which links every plugin (cloud providers' SDKs included); this one does not.
package main

import (
	"github.com/coredns/coredns/coremain"

	// The plugins register themselves with caddy in their init functions; dnsserver.Directives
	// keeps CoreDNS's own order for them.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
