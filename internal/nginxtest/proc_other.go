//go:build !linux

package nginxtest

import "syscall"

// sysProcAttr puts nginx in its own process group (stop kills the group past its bound).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
