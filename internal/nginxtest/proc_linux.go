package nginxtest

import "syscall"

// sysProcAttr puts nginx in its own process group (stop kills the group past its bound) and has
// the kernel send the master SIGTERM if the test process dies first, so no nginx outlives a
// crashed or timed-out test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
