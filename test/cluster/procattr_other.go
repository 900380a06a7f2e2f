//go:build !linux

package cluster

import "os/exec"

// setProcAttr does nothing: only Linux kills children with their parent.
func setProcAttr(cmd *exec.Cmd) {}
