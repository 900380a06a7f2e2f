package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/loadgen"
	"github.com/crdserver/crdserver/internal/server"
)

// defaults is the Config an empty command line gives.
var defaults = server.Config{
	DataDir:               ".crdserver",
	BindAddress:           "127.0.0.1",
	SecurePort:            6443,
	EtcdPrefix:            "/registry",
	MaxRequestsInflight:   400,
	RequestTimeout:        time.Minute,
	MaxWatchesPerUser:     500,
	ShutdownTimeout:       30 * time.Second,
	ServiceClusterIPRange: "10.0.0.0/24",
	ServiceNodePortRange:  "30000-32767",
	EventTTL:              time.Hour,
	Storage:               server.StorageEtcd,
	AuthorizationMode:     "RBAC",
}

func withDefaults(change func(*server.Config)) server.Config {
	c := defaults
	change(&c)
	return c
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    server.Config
		wantErr string // substring; empty means success
	}{
		{name: "defaults", args: nil, want: defaults},
		{
			name: "every flag, double dash",
			args: []string{
				"--data-dir=/var/lib/crd", "--bind-address", "0.0.0.0", "--secure-port=0",
				"--etcd-servers=https://a:2379,https://b:2379", "--etcd-prefix=/crd",
				"--etcd-cafile=ca.pem", "--etcd-certfile=c.pem", "--etcd-keyfile=k.pem",
				"--tls-cert-file=s.crt", "--tls-private-key-file=s.key", "--client-ca-file=clients.pem",
				"--tls-san=example.com", "--max-requests-inflight=-1", "--shutdown-timeout=5s",
				"--service-cluster-ip-range=fd00::/108", "--service-node-port-range=20000-20999", "--event-ttl=5m",
				"--authorization-mode=AlwaysAllow",
				"--request-timeout=30s", "--max-watches-per-user=10",
			},
			want: server.Config{
				DataDir: "/var/lib/crd", BindAddress: "0.0.0.0", SecurePort: 0,
				EtcdServers: []string{"https://a:2379", "https://b:2379"}, EtcdPrefix: "/crd",
				EtcdCAFile: "ca.pem", EtcdCertFile: "c.pem", EtcdKeyFile: "k.pem",
				TLSCertFile: "s.crt", TLSPrivateKeyFile: "s.key", ClientCAFile: "clients.pem",
				TLSSANs: []string{"example.com"}, MaxRequestsInflight: -1, ShutdownTimeout: 5 * time.Second,
				ServiceClusterIPRange: "fd00::/108", ServiceNodePortRange: "20000-20999", EventTTL: 5 * time.Minute, Storage: server.StorageEtcd,
				AuthorizationMode: "AlwaysAllow",
				RequestTimeout:    30 * time.Second, MaxWatchesPerUser: 10,
			},
		},
		{
			name: "request-timeout 0 disables it",
			args: []string{"--request-timeout=0"},
			want: withDefaults(func(c *server.Config) { c.RequestTimeout = -1 }),
		},
		{
			name: "event-ttl 0 keeps events",
			args: []string{"--event-ttl=0"},
			want: withDefaults(func(c *server.Config) { c.EventTTL = -1 }),
		},
		{
			name: "single dash works too",
			args: []string{"-secure-port", "7443"},
			want: withDefaults(func(c *server.Config) { c.SecurePort = 7443 }),
		},
		{
			name: "tls-san repeated and comma-separated",
			args: []string{"--tls-san=a.example.com,10.0.0.1", "--tls-san", "b.example.com", "--tls-san= ,::1,"},
			want: withDefaults(func(c *server.Config) {
				c.TLSSANs = []string{"a.example.com", "10.0.0.1", "b.example.com", "::1"}
			}),
		},
		{
			name: "etcd-servers repeated",
			args: []string{"--etcd-servers=http://a:2379", "--etcd-servers=http://b:2379"},
			want: withDefaults(func(c *server.Config) { c.EtcdServers = []string{"http://a:2379", "http://b:2379"} }),
		},
		{
			name: "memory storage",
			args: []string{"--storage=memory"},
			want: withDefaults(func(c *server.Config) { c.Storage = server.StorageMemory }),
		},
		{name: "unknown storage", args: []string{"--storage=disk"}, wantErr: "--storage"},
		{name: "memory storage with etcd servers", args: []string{"--storage=memory", "--etcd-servers=http://a:2379"}, wantErr: "--etcd-servers"},
		{name: "IPv6 bind address", args: []string{"--bind-address=::1"}, want: withDefaults(func(c *server.Config) { c.BindAddress = "::1" })},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		{name: "bad port", args: []string{"--secure-port=70000"}, wantErr: "--secure-port"},
		{name: "negative port", args: []string{"--secure-port=-1"}, wantErr: "--secure-port"},
		{name: "port not a number", args: []string{"--secure-port=http"}, wantErr: "secure-port"},
		{name: "bind address not an IP", args: []string{"--bind-address=localhost"}, wantErr: "--bind-address"},
		{name: "cert without key", args: []string{"--tls-cert-file=s.crt"}, wantErr: "--tls-private-key-file"},
		{name: "etcd key without cert", args: []string{"--etcd-keyfile=k.pem"}, wantErr: "--etcd-certfile"},
		{name: "negative shutdown timeout", args: []string{"--shutdown-timeout=-1s"}, wantErr: "--shutdown-timeout"},
		{name: "bad duration", args: []string{"--shutdown-timeout=soon"}, wantErr: "shutdown-timeout"},
		{name: "positional argument", args: []string{"serve"}, wantErr: `unexpected argument "serve"`},
		{name: "log format json", args: []string{"--log-format=json", "-v=2"}, want: defaults},
		{name: "bad log format", args: []string{"--log-format=xml"}, wantErr: "--log-format"},
		{name: "negative verbosity", args: []string{"-v=-1"}, wantErr: "-v"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) error = %v, want one mentioning %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if got.Flags == nil {
				t.Errorf("parseFlags(%q) gives no Flags for /flagz", tt.args)
			}
			got.Flags = nil // a func; TestFlagValues checks what it returns
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseFlags(%q) =\n%+v\nwant\n%+v", tt.args, got, tt.want)
			}
		})
	}
}

// TestFlagValues checks what /flagz shows: every flag, given or not, as
// it prints its value.
func TestFlagValues(t *testing.T) {
	cfg, _, err := parseFlags([]string{"--secure-port=7443", "--tls-san=a.example.com", "--tls-san=b.example.com", "-v=2"})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Flags()
	for name, want := range map[string]string{
		"secure-port":      "7443",
		"tls-san":          "a.example.com,b.example.com",
		"v":                "2",
		"data-dir":         ".crdserver",
		"shutdown-timeout": "30s",
		"anonymous-auth":   "false",
		"audit-log-path":   "",
		"version":          "false",
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("--%s is %q (listed: %v), want %q", name, v, ok, want)
		}
	}
	var n int
	serverFlags(&server.Config{}, &logOptions{}, new(bool)).VisitAll(func(*flag.Flag) { n++ })
	if len(got) != n {
		t.Errorf("%d flags listed, want all %d", len(got), n)
	}
}

// TestDefaultedFlagValues: flags that are more than a plain value
// (a 0 that means never, a bool that disables, feature gates) show their
// defaults and what was given, not an empty value.
func TestDefaultedFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[string]string
	}{
		{nil, map[string]string{"request-timeout": "1m0s", "event-ttl": "1h0m0s", "profiling": "true", "feature-gates": ""}},
		{
			[]string{"--request-timeout=0", "--event-ttl=5m", "--profiling=false", "--feature-gates=APIResponseCompression=false"},
			map[string]string{"request-timeout": "0s", "event-ttl": "5m0s", "profiling": "false", "feature-gates": "APIResponseCompression=false"},
		},
	} {
		cfg, _, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.Flags()
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("%q: --%s is %q, want %q", tc.args, name, got[name], want)
			}
		}
	}
}

func TestLogOptions(t *testing.T) {
	_, o, err := parseFlags([]string{"--log-format", "json", "-v", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if o != (logOptions{format: "json", verbosity: 2}) {
		t.Fatalf("log options = %+v", o)
	}
	var buf strings.Builder
	log := newLogger(&buf, o)
	log.Log(context.Background(), slog.Level(-2), "HTTP", "resp", 200)
	log.Log(context.Background(), slog.Level(-3), "hidden")
	if got := buf.String(); !strings.HasPrefix(got, `{"time":`) || !strings.Contains(got, `"resp":200`) || strings.Contains(got, "hidden") {
		t.Errorf("json logger at -v=2 wrote %q", got)
	}
	buf.Reset()
	newLogger(&buf, logOptions{format: "text"}).Log(context.Background(), slog.Level(-2), "HTTP")
	if buf.Len() != 0 {
		t.Errorf("text logger at -v=0 wrote %q for a V(2) line", buf.String())
	}
}

func TestParseFlagsHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		if _, _, err := parseFlags(args); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("parseFlags(%q) = %v, want flag.ErrHelp", args, err)
		}
	}
	if _, _, err := parseFlags([]string{"--version"}); !errors.Is(err, errShowVersion) {
		t.Errorf("parseFlags(--version) = %v, want errShowVersion", err)
	}
}

func TestRunVersionAndUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "crdserver ") {
		t.Errorf("--version: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--secure-port") && !strings.Contains(stdout.String(), "-secure-port") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout.String())
	}
	stderr.Reset()
	if code := run([]string{"--bogus"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "bogus") {
		t.Errorf("--bogus: exit %d, stderr %q", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"bench", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "concurrency") {
		t.Errorf("bench --help: exit %d, stdout %q", code, stdout.String())
	}
}

func TestParseBenchFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, o benchOptions)
		wantErr string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, o benchOptions) {
				if o.Resource != loadgen.ResourceWidgets || !o.InstallCRD || o.SkipInstallCRD || !o.Cleanup || o.SkipCleanup ||
					o.Concurrency != 10 || o.ObjectSize != 2048 || o.Count != 0 || o.Duration != 0 || o.JSON || len(o.Workloads) != 0 ||
					o.WatchAs != loadgen.WatchAsJSON {
					t.Errorf("unexpected defaults: %+v", o)
				}
			},
		},
		{
			name: "everything",
			args: []string{
				"--kubeconfig=kc", "--resource=namespaces", "--install-crd=false", "--namespace=ns", "--prefix=p",
				"--object-size=4096", "--workloads=create,get", "--workloads=watch", "--concurrency=64", "--count=5000",
				"--duration=30s", "--rate=250", "--objects=200", "--page-size=100", "--watchers=50", "--watch-timeout=1m",
				"--cleanup=false", "--etcd-endpoints=https://127.0.0.1:2379", "--etcd-cert=c", "--etcd-key=k",
				"--etcd-ca=ca", "--json", "--as-user=u", "--as-group=g1,g2", "--data-dir=d",
				"--quiet-rate=30", "--noisy-rate=300", "--admission-rounds=7", "--admission-copies=3", "--fields-rounds=4",
				"--watch-as=metadata-protobuf",
			},
			check: func(t *testing.T, o benchOptions) {
				want := loadgen.Config{
					Kubeconfig: "kc", Resource: "namespaces", SkipInstallCRD: true, Namespace: "ns", Prefix: "p",
					ObjectSize: 4096, Workloads: []string{"create", "get", "watch"}, Concurrency: 64, Count: 5000,
					Duration: 30 * time.Second, Rate: 250, Objects: 200, PageSize: 100, Watchers: 50, WatchTimeout: time.Minute,
					SkipCleanup: true, EtcdEndpoints: []string{"https://127.0.0.1:2379"}, EtcdCertFile: "c",
					EtcdKeyFile: "k", EtcdCAFile: "ca", AsUser: "u", AsGroups: []string{"g1", "g2"}, DataDir: "d",
					QuietRate: 30, NoisyRate: 300, AdmissionRounds: 7, AdmissionCopies: 3, FieldsRounds: 4,
					WatchAs: loadgen.WatchAsMetadataProtobuf,
				}
				if !reflect.DeepEqual(o.Config, want) || !o.JSON {
					t.Errorf("got %+v\nwant %+v", o.Config, want)
				}
			},
		},
		{name: "zero concurrency", args: []string{"--concurrency=0"}, wantErr: "--concurrency"},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected argument"},
		{name: "unknown flag", args: []string{"--qps=5"}, wantErr: "qps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseBenchFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

// TestFeatureGates checks --feature-gates: APIResponseCompression turns
// compression off and on, and anything else is refused as upstream
// refuses it.
func TestFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		value       string
		wantOff     bool
		wantErrText string
	}{
		{value: "APIResponseCompression=false", wantOff: true},
		{value: "APIResponseCompression=true"},
		{value: "APIResponseCompression=true, APIResponseCompression=false", wantOff: true},
		{value: "Unknown=true", wantErrText: "unrecognized feature gate: Unknown"},
		{value: "APIResponseCompression", wantErrText: "missing bool value for APIResponseCompression"},
		{value: "APIResponseCompression=sometimes", wantErrText: "invalid value of APIResponseCompression=sometimes"},
	} {
		var cfg server.Config
		err := featureGates(&cfg).Set(tc.value)
		switch {
		case tc.wantErrText != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
				t.Errorf("%q: error %v, want one saying %q", tc.value, err, tc.wantErrText)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case cfg.DisableResponseCompression != tc.wantOff:
			t.Errorf("%q: compression off %v, want %v", tc.value, cfg.DisableResponseCompression, tc.wantOff)
		}
	}
}
