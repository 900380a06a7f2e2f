package main

import (
	"flag"

	"github.com/crdserver/crdserver/internal/server"
)

// auditAndEncryptionFlags binds upstream's audit log and encryption at
// rest flags to cfg.
func auditAndEncryptionFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.StringVar(&cfg.AuditPolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy file; with --audit-log-path, requests are audited")
	fs.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "file audit events are appended to as JSON lines; - means stdout")
	fs.IntVar(&cfg.AuditLogMaxSizeMB, "audit-log-maxsize", 0, "megabytes of audit log after which it is rotated; 0 never rotates")
	fs.IntVar(&cfg.AuditLogMaxBackups, "audit-log-maxbackup", 0, "rotated audit log files to keep; 0 keeps all")
	fs.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "apiserver.config.k8s.io/v1 EncryptionConfiguration file: the resources it lists are encrypted in etcd")
}
