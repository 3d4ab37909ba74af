//go:build tools

// Package tools records the main packages scripts/build-kube builds, so that
// `go mod tidy` keeps their dependencies in go.mod/go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
