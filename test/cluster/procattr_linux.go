package cluster

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the child if this process dies, so an
// interrupted test or devcluster leaves no servers behind.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
