//go:build tools

// Package tools pins the Kubernetes components that scripts/e2e-k8s.sh builds and runs.
// It lives in its own module so the project's go.mod never carries Kubernetes' replaces.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
