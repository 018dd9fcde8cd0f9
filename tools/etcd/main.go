// Command etcd is etcd v3.6.8's server, built from its published module so
// scripts/e2e-k8s.sh can give the control plane a real store without a download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
