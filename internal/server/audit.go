package server

import (
	"fmt"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
)

// startAudit loads the audit policy and opens the log. Without a policy
// file or a log path nothing is audited, as upstream: both are needed.
func (s *Server) startAudit() (*audit.Policy, audit.Sink, error) {
	if s.cfg.AuditPolicyFile == "" || s.cfg.AuditLogPath == "" {
		return nil, nil, nil
	}
	p, err := audit.LoadPolicy(s.cfg.AuditPolicyFile)
	if err != nil {
		return nil, nil, err
	}
	l, err := audit.NewLog(audit.LogConfig{
		Path:       s.cfg.AuditLogPath,
		MaxSize:    int64(s.cfg.AuditLogMaxSizeMB) << 20,
		MaxBackups: s.cfg.AuditLogMaxBackups,
		Logger:     s.log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	s.auditLog = l
	return p, l, nil
}

// protobufJSON lets the audit log record protobuf bodies (kubectl sends
// built-ins as protobuf) as JSON, decoded with the resource's Go type.
func protobufJSON(reg *registry.Registry) func(*request.Info, []byte) ([]byte, bool) {
	return func(info *request.Info, body []byte) ([]byte, bool) {
		def, ok := reg.Current().Lookup(info.APIGroup, info.Resource)
		if !ok {
			return nil, false
		}
		return handler.ProtobufJSON(def, info.APIVersion, body)
	}
}
