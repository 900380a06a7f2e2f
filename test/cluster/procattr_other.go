//go:build !linux

package cluster

import (
	"errors"
	"os/exec"
)

// setProcAttr does nothing: only Linux kills children with their parent.
func setProcAttr(cmd *exec.Cmd) {}

func (p *process) pause() error  { return errors.ErrUnsupported }
func (p *process) resume() error { return errors.ErrUnsupported }
