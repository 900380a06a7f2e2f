// Package server wires every part of crdserver from a Config, starts the
// listeners, storage and controllers, and stops them in reverse order.
package server

import (
	"time"

	"k8s.io/utils/clock"
)

// Config is the whole configuration of one crdserver process. The zero value
// of every field is a working default (see Complete). Fields must not change
// after Run is called.
type Config struct {
	// DataDir holds the embedded etcd data, the generated PKI and
	// admin.kubeconfig. Default ".crdserver".
	DataDir string
	// BindAddress is the IP to serve on. Default 127.0.0.1.
	BindAddress string
	// SecurePort is the HTTPS port; 0 picks a free port (logged). Default
	// handling: the command line passes 6443 unless told otherwise.
	SecurePort int

	// Storage is StorageEtcd (the default: EtcdServers, or an embedded
	// etcd when that is empty) or StorageMemory.
	Storage string
	// EtcdServers selects an external etcd cluster; empty starts the embedded one.
	EtcdServers  []string
	EtcdPrefix   string // default "/registry"
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	// TLSCertFile/TLSPrivateKeyFile serve this certificate instead of the
	// generated one. ClientCAFile verifies client certificates instead of the
	// generated CA.
	TLSCertFile       string
	TLSPrivateKeyFile string
	ClientCAFile      string
	// TLSSANs are extra names and IPs for the generated serving certificate.
	TLSSANs []string

	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from;
	// the default is upstream's, 10.0.0.0/24.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range ("low-high") Services' node ports
	// come from; the default is upstream's, 30000-32767.
	ServiceNodePortRange string

	// MaxRequestsInflight is the number of non-long-running requests
	// served at once, shared fairly among users; beyond it requests wait
	// in their user's queue, and get 429 when it is full (internal/fairness).
	// 0 means the default (400); negative disables the limit.
	MaxRequestsInflight int
	// RequestTimeout bounds non-long-running requests (504 past it), as
	// upstream's --request-timeout. 0 means the default (1m); negative
	// disables.
	RequestTimeout time.Duration
	// MaxWatchesPerUser bounds the watches one user holds open (429
	// beyond). 0 means the default (500); negative disables.
	MaxWatchesPerUser int
	// DisableResponseCompression stops gzipping large answers (see
	// filters.Compress), as upstream's
	// --feature-gates=APIResponseCompression=false does.
	DisableResponseCompression bool
	// Clock, if set, is the time the server's expiries follow instead of
	// the real one: events' TTL with memory storage (etcd's leases keep
	// real time), and the issue and expiry times of ServiceAccount tokens.
	// Timestamps on objects stay real. crdtest passes a fake clock here.
	Clock clock.WithDelayedExecution
	// WebhookHTTP1 calls admission and conversion webhooks over HTTP/1.1
	// only (see webhook.Manager.HTTP1): crdtest sets it, so that the test's
	// webhook servers stop at once.
	WebhookHTTP1 bool
	// EventTTL is how long events (core and events.k8s.io) live after
	// their last write, as upstream's --event-ttl: each write attaches
	// the event to an etcd lease of this TTL (see storage.Expirer).
	// Default (0) upstream's 1h; negative keeps events until deleted.
	EventTTL time.Duration

	// AuthorizationMode is how requests are authorized: "RBAC" (the
	// default) or "AlwaysAllow" (every authenticated request, except
	// /metrics and /debug/pprof, which stay the admins').
	AuthorizationMode string

	// ShutdownTimeout bounds graceful shutdown. Default 30s.
	ShutdownTimeout time.Duration
	// AuditPolicyFile is an audit.k8s.io/v1 Policy; with AuditLogPath
	// ("-" for stdout) requests are audited as JSON lines.
	// AuditLogMaxSizeMB rotates the log at that size (0: never);
	// AuditLogMaxBackups bounds the rotated files kept (0: all).
	AuditPolicyFile    string
	AuditLogPath       string
	AuditLogMaxSizeMB  int
	AuditLogMaxBackups int
	// EncryptionProviderConfig is an apiserver.config.k8s.io/v1
	// EncryptionConfiguration: the resources it lists are encrypted in
	// etcd.
	EncryptionProviderConfig string

	// DisableProfiling turns off /debug/pprof (served by default, as
	// upstream's --profiling, to system:masters only: see
	// authz.Privileged).
	DisableProfiling bool

	// Flags returns the command-line flags the server was started with,
	// each name with its value as the flag prints it, for /flagz; nil
	// (a server not started from a command line) shows none.
	Flags func() map[string]string

	AuthnConfig
}

// AuthnConfig is authentication beyond client certificates (see authn.go).
type AuthnConfig struct {
	// TokenAuthFile is upstream's --token-auth-file: a CSV of
	// token,user,uid,"group1,group2" records.
	TokenAuthFile string
	// AuthenticationConfigFile is upstream's --authentication-config: an
	// apiserver.config.k8s.io AuthenticationConfiguration with JWT (OIDC)
	// issuers.
	AuthenticationConfigFile string
	// AnonymousAuth lets requests without credentials through as
	// system:anonymous (group system:unauthenticated); off by default.
	AnonymousAuth bool
	// ServiceAccountIssuer is the iss of service account tokens; default
	// https://kubernetes.default.svc.cluster.local.
	ServiceAccountIssuer string
}
