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

// pause stops the process (SIGSTOP) until resume (SIGCONT): it keeps its
// sockets but answers nothing, as a member cut off by a partition does.
func (p *process) pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *process) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }
