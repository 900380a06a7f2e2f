package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/certs"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/crd"
	"github.com/crdserver/crdserver/internal/discovery"
	"github.com/crdserver/crdserver/internal/filters"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/health"
	"github.com/crdserver/crdserver/internal/metrics"
	"github.com/crdserver/crdserver/internal/openapi"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
	"github.com/crdserver/crdserver/internal/router"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/embedded"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/textpages"
	"github.com/crdserver/crdserver/internal/version"
	"github.com/crdserver/crdserver/internal/webhook"
	"github.com/crdserver/crdserver/internal/zpages"
)

// Server is one running crdserver.
type Server struct {
	cfg        Config
	log        *slog.Logger
	URL        string // https://host:port
	Addr       net.Addr
	PKI        *certs.PKI
	Kubeconfig string // path of admin.kubeconfig

	etcdServer *embedded.Server
	backend    backend
	raw        storage.Interface // backend, encrypting rawGRs (see rawStorage)
	stores     *stores
	crds       *crdServer
	gc         *controllers.GarbageCollector
	// recountQuotas has a namespace's ResourceQuotas counted again.
	recountQuotas func(namespace string)
	webhooks      *webhook.Manager
	authz         *authorization
	handler       *handler.Handler
	metrics       *metrics.Metrics
	auditLog      *audit.Log // closed after the last request
	http          *http.Server
	cancel        context.CancelFunc
	done          chan struct{}
	// shuttingDown fails readyz's shutdown check once Shutdown began.
	shuttingDown atomic.Bool
	// priorityClassesEnsured is set once the system PriorityClasses are
	// stored.
	priorityClassesEnsured atomic.Bool
	// authInfoPublished is set once kube-system's
	// extension-apiserver-authentication ConfigMap is written.
	authInfoPublished atomic.Bool
	// serviceCIDREnsured is set once the default ServiceCIDR is stored.
	serviceCIDREnsured atomic.Bool
	// apfEnsured is set once upstream's APF configuration is first stored.
	apfEnsured atomic.Bool
	// ipRepaired and portsRepaired are set once the ClusterIP and node
	// port repair loops first checked every Service.
	ipRepaired, portsRepaired atomic.Bool
	// systemNamespacesEnsured and kubernetesServiceEnsured are set once
	// the initial namespaces and the default/kubernetes Service exist;
	// crdControllersStarted once the CRD controller runs.
	systemNamespacesEnsured, kubernetesServiceEnsured, crdControllersStarted atomic.Bool
	// leaseWritten is set once the identity Lease is first written.
	leaseWritten atomic.Bool
	serveErr     chan error

	// stopBackground ends the background loops (controllers, compactor);
	// background counts them, so that Shutdown closes storage only once
	// none of them can still use it.
	stopBackground context.CancelFunc
	background     sync.WaitGroup
}

// complete fills defaults.
func (c Config) complete() Config {
	if c.DataDir == "" {
		c.DataDir = ".crdserver"
	}
	if c.BindAddress == "" {
		c.BindAddress = "127.0.0.1"
	}
	if c.EtcdPrefix == "" {
		c.EtcdPrefix = "/registry"
	}
	c.EtcdPrefix = "/" + strings.Trim(c.EtcdPrefix, "/")
	// The default ServiceCIDR is written from it: it must name the range
	// the allocator gives addresses from.
	if c.ServiceClusterIPRange == "" {
		c.ServiceClusterIPRange = builtin.DefaultServiceClusterIPRange
	}
	if c.MaxRequestsInflight == 0 {
		c.MaxRequestsInflight = 400
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = filters.DefaultRequestTimeout
	}
	if c.MaxWatchesPerUser == 0 {
		c.MaxWatchesPerUser = filters.DefaultMaxWatchesPerUser
	}
	switch {
	case c.EventTTL == 0:
		c.EventTTL = time.Hour
	case c.EventTTL < 0:
		c.EventTTL = 0 // builtin.Events: kept until deleted
	}
	return c
}

// Run starts a server and serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	go s.dropStartupPages(ctx)
	select {
	case <-ctx.Done():
	case err := <-s.serveErr:
		s.Shutdown()
		return err
	}
	return s.Shutdown()
}

// Start builds every part from cfg and starts serving. It returns once the
// listener accepts connections; /readyz turns 200 once the caches are
// filled.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	started := time.Now()
	cfg = cfg.complete()
	s := &Server{cfg: cfg, log: slog.Default(), done: make(chan struct{}), serveErr: make(chan error, 1)}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			s.Shutdown()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}

	if s.PKI, err = cfg.ensurePKI(); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	tlsCfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}

	if err := s.startStorage(ctx); err != nil {
		return nil, err
	}
	if err := s.checkIdentity(ctx); err != nil {
		return nil, err
	}

	encryption, err := loadEncryption(cfg.EncryptionProviderConfig)
	if err != nil {
		return nil, err
	}
	s.raw = rawStorage(s.backend, encryption, cfg.EtcdPrefix)

	auth, err := s.newAuthentication()
	if err != nil {
		return nil, err
	}

	ips, err := builtin.NewClusterIPs(cfg.ServiceClusterIPRange, s.raw,
		keyPrefix(cfg.EtcdPrefix, ipAddressesGR), keyPrefix(cfg.EtcdPrefix, servicesGR))
	if err != nil {
		return nil, err
	}
	nodePorts, err := s.newNodePorts()
	if err != nil {
		return nil, err
	}
	if s.authz, err = newAuthorization(cfg.AuthorizationMode); err != nil {
		return nil, err
	}
	pods := &podAdmission{s: s}
	pods.def = builtin.Pods(pods, pods)
	builtins := []*registry.Definition{
		builtin.Namespaces(), crd.Definition(), builtin.StorageVersionMigrations(),
		builtin.WithServiceProxy(builtin.Services(ips, nodePorts), serviceBackends{s}, serviceIPFamily(ips)),
		builtin.Endpoints(), builtin.EndpointSlices(),
		builtin.ConfigMaps(), builtin.Secrets(), builtin.WithTokenRequest(builtin.ServiceAccounts(), auth.issuer, builtin.BoundSecretsFunc(s.secretUID), auth.issuer.Now), builtin.Events(cfg.EventTTL), builtin.EventsV1(cfg.EventTTL),
		builtin.PodTemplates(), builtin.Leases(), builtin.ResourceQuotas(), builtin.LimitRanges(),
		builtin.Deployments(), builtin.ReplicaSets(), builtin.StatefulSets(), builtin.DaemonSets(),
		builtin.ReplicationControllers(), builtin.ControllerRevisions(), builtin.ComponentStatuses(builtin.Components(s.etcdHealth())),
		builtin.Jobs(), builtin.CronJobs(), builtin.HorizontalPodAutoscalers(), builtin.PodDisruptionBudgets(),
		builtin.Ingresses(s.ingressClasses), builtin.IngressClasses(), builtin.NetworkPolicies(), builtin.CertificateSigningRequests(),
		builtin.RuntimeClasses(), builtin.PriorityClasses(), builtin.CSINodes(),
		builtin.FlowSchemas(), builtin.PriorityLevelConfigurations(),
		builtin.IPAddresses(), builtin.ServiceCIDRs(),
		builtin.PersistentVolumeClaims(s.storageClasses), builtin.StorageClasses(),
		builtin.PersistentVolumes(nil), builtin.Nodes(),
		builtin.CSIDrivers(), builtin.VolumeAttributesClasses(),
		builtin.VolumeAttachments(), builtin.CSIStorageCapacities(),
		builtin.DeviceClasses(), builtin.ResourceClaims(), builtin.ResourceClaimTemplates(), builtin.ResourceSlices(), builtin.DeviceTaintRules(),
		builtin.MutatingWebhookConfigurations(), builtin.ValidatingWebhookConfigurations(),
		builtin.ValidatingAdmissionPolicies(), builtin.ValidatingAdmissionPolicyBindings(),
		builtin.APIServices(),
		builtin.MutatingAdmissionPolicies(), builtin.MutatingAdmissionPolicyBindings(),
		pods.def, builtin.Bindings(pods.def),
	}
	builtins = append(builtins, auth.definitions()...)
	builtins = append(builtins, s.authz.definitions()...)
	builtins = append(builtins, builtin.ClusterTrustBundles(s.authz), builtin.PodCertificateRequests(s.authz))
	for _, d := range builtins {
		d.FieldTypes = apply.NewTypes(d)
		if d.StoredAs != nil {
			// Its objects are converted on every read: the watchers of
			// one version share each event's conversion.
			d.Converter = conversion.NewTyped(d, typedConversionCache)
		}
	}
	reg := registry.New(builtins)
	s.metrics = metrics.New()
	s.stores = newStores(ctx, s.backend, reg, cfg.EtcdPrefix, s.log, s.metrics)
	s.stores.encryption = encryption
	s.metrics.Register(metrics.Caches(s.stores.stats))
	for _, d := range reg.Current().Definitions() {
		s.stores.ensure(d)
	}
	// Webhooks registered by Service are resolved through the stored
	// Services, Endpoints and EndpointSlices.
	s.webhooks = &webhook.Manager{Resolver: webhook.ServiceResolver{Services: storedServices{s.stores}}, HTTP1: cfg.WebhookHTTP1}
	if err := untilAvailable(ctx, "creating the initial namespaces", startupPatience, s.createInitialNamespaces); err != nil {
		return nil, err
	}
	s.systemNamespacesEnsured.Store(true)
	registrations := newStoredAdmission(s.stores)
	adm := admission.New(admission.Config{
		Clients:          s.webhooks,
		Source:           registrations,
		Namespaces:       registrations,
		Policies:         registrations,
		MutatingPolicies: registrations,
		Params:           storedParams{stores: s.stores, reg: reg},
		Authorizer:       s.authz,
		Logger:           s.log,
		Metrics:          s.metrics,
	})
	quotas := newQuotas(s, reg)
	quotaStore, _ := s.stores.Store(resourceQuotasGR)
	qc := &controllers.Quotas{Cache: quotaStore.Cache, Sync: quotas.sync, Objects: quotas.objects, Log: s.log}
	s.recountQuotas = qc.Recount
	s.handler = handler.New(handler.Config{Registry: reg, Stores: s.stores, Logger: s.log, Admission: adm, Quota: quotas, Authorizer: s.authz.chain, Metrics: s.metrics})

	// The background loops get their own context: Shutdown ends them
	// before the caches and storage they use, while requests still drain.
	bgCtx, stopBackground := context.WithCancel(ctx)
	s.stopBackground = stopBackground
	nsStore, _ := s.stores.Store(builtin.Namespaces().GroupResource())
	nsc := &controllers.Namespaces{Cache: nsStore.Cache, Content: &namespaceContent{s: s, reg: reg}, Log: s.log}
	s.background.Go(func() { nsc.Run(bgCtx) })
	saStore, _ := s.stores.Store(builtin.ServiceAccounts().GroupResource())
	sac := &controllers.NamespaceObjects{
		Name: "service account controller", Namespaces: nsStore.Cache, Objects: saStore.Cache, Object: builtin.DefaultServiceAccount,
		Ensure: func(ctx context.Context, ns string) error {
			return s.ensureServiceAccount(ctx, ns, builtin.DefaultServiceAccount)
		},
		Log: s.log,
	}
	s.background.Go(func() { sac.Run(bgCtx) })
	cmStore, _ := s.stores.Store(builtin.ConfigMaps().GroupResource())
	rootCA := &controllers.NamespaceObjects{
		Name: "root CA publisher", Namespaces: nsStore.Cache, Objects: cmStore.Cache, Object: builtin.RootCAConfigMap, Owned: true,
		Ensure: s.ensureRootCA, Log: s.log,
	}
	s.background.Go(func() { rootCA.Run(bgCtx) })
	authInfo, err := newClusterAuthInfo(s)
	if err != nil {
		return nil, err
	}
	s.background.Go(func() { s.authInfoPublished.Store(authInfo.ensure(bgCtx)) })
	sysc := &controllers.Each{Name: "cluster authentication info", Cache: cmStore.Cache, Sync: authInfo.Sync, Log: s.log, Deletes: true}
	s.background.Go(func() { sysc.Run(bgCtx) })
	// Before the CRD controller, which tells it of new resources.
	s.gc = controllers.NewGarbageCollector(&gcServer{s: s, reg: reg}, s.log)
	s.background.Go(func() { s.gc.Run(bgCtx) })
	crdStore, _ := s.stores.Store(crdGR)
	apis := newAPIServices(s, reg)
	s.background.Go(func() { apis.run(bgCtx) })
	s.crds = &crdServer{s: s, reg: reg, builtins: builtins, swapped: func() {
		apis.changed()
		qc.Recheck()
	}}
	crdc := &controllers.CRDs{Cache: crdStore.Cache, Server: s.crds, Log: s.log}
	s.background.Go(func() {
		s.crdControllersStarted.Store(true)
		crdc.Run(bgCtx)
	})
	svmStore, _ := s.stores.Store(svmGR)
	migc := &controllers.Migrations{Cache: svmStore.Cache, Server: &migrationServer{s: s, reg: reg}, Log: s.log}
	s.background.Go(func() { migc.Run(bgCtx) })
	vapStore, _ := s.stores.Store(builtin.ValidatingAdmissionPolicies().GroupResource())
	ptc := &controllers.Each{Name: "policy type checker", Cache: vapStore.Cache, Sync: newPolicyTypeServer(s, reg).CheckPolicy, Log: s.log}
	s.background.Go(func() { ptc.Run(bgCtx) })
	// kube-controller-manager's pvc-protection, pv-protection and
	// vac-protection controllers: deleted claims, volumes and
	// VolumeAttributesClasses no longer in use go.
	protection := storageProtection{s: s}
	for _, c := range []struct {
		name string
		gr   schema.GroupResource
		sync func(context.Context, string) error
		// users: the objects watched hold others; their deletes free them.
		users bool
	}{
		{"pvc protection", pvcGR, protection.SyncClaim, false},
		{"pv protection", pvGR, protection.SyncVolume, false},
		{"pvc protection (pods)", podsGR, protection.SyncPod, true},
		{"vac protection", vacGR, protection.SyncClass, false},
		{"vac protection (claims)", pvcGR, protection.SyncClassUsers, true},
		{"vac protection (volumes)", pvGR, protection.SyncClassUsers, true},
	} {
		if st, ok := s.stores.Store(c.gr); ok {
			ctl := &controllers.Each{Name: c.name, Cache: st.Cache, Sync: c.sync, Log: s.log, Deletes: c.users}
			s.background.Go(func() { ctl.Run(bgCtx) })
		}
	}
	apiServiceStore, _ := s.stores.Store(builtin.APIServices().GroupResource())
	avc := &controllers.Each{Name: "APIService availability", Cache: apiServiceStore.Cache, Sync: apis.markAvailable, Log: s.log}
	s.background.Go(func() { avc.Run(bgCtx) })
	pdbStore, _ := s.stores.Store(builtin.PodDisruptionBudgets().GroupResource())
	pdc := &controllers.Each{Name: "disruption", Cache: pdbStore.Cache, Sync: newDisruptionStatus(s).sync, Log: s.log}
	s.background.Go(func() { pdc.Run(bgCtx) })
	s.background.Go(func() { qc.Run(bgCtx) })
	s.background.Go(func() { s.backend.RunCompactor(bgCtx, 5*time.Minute) })
	s.authz.start(bgCtx, s)
	s.background.Go(func() { s.ensurePriorityClasses(bgCtx) })
	apf := newAPFConfig(s, builtins)
	if cfg.MaxRequestsInflight >= 0 {
		s.metrics.Register(nominalSeats{apf: apf, seats: cfg.MaxRequestsInflight})
	}
	s.background.Go(func() { apf.run(bgCtx) })
	s.background.Go(func() { s.ensureDefaultServiceCIDR(bgCtx) })
	s.startServiceRepair(bgCtx, ips, nodePorts)

	var profiling http.Handler
	if !cfg.DisableProfiling {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		profiling = mux
	}
	healthz := s.healthEndpoints(apf)
	slis := metrics.NewSLIs()
	disc := discovery.New(reg)
	// The component pages list what the index lists, so they read
	// routes, set below, when they serve.
	var routes router.Config
	pages := zpages.Config{
		Component: "apiserver", // kube-apiserver's name on its pages
		Started:   started,
		Paths:     func() []string { return routes.ListedPaths() },
		Flags:     cfg.Flags,
	}
	routes = router.Config{
		Profiling: profiling,
		Metrics:   s.metrics.Handler(),
		SLIs:      slis.Handler(),
		Health:    health.Handler(s.log, slis, healthz...),
		Version:   version.Handler{},
		OpenAPI:   openapi.New(reg),
		Discovery: disc,
		Resources: s.handler,
		Issuer:    auth.discovery,
		Paths: func() []string {
			paths := disc.Paths()
			for _, e := range healthz {
				paths = append(paths, e.Paths()...)
			}
			return paths
		},
		Statusz: zpages.Statusz(pages),
		Flagz:   zpages.Flagz(pages),
	}
	auditPolicy, auditSink, err := s.startAudit()
	if err != nil {
		return nil, err
	}
	auditCfg := filters.AuditConfig{Policy: auditPolicy, Sink: auditSink, Protobuf: protobufJSON(reg)}
	compress := filters.Compress
	if cfg.DisableResponseCompression {
		compress = func(h http.Handler) http.Handler { return h }
	}
	chain := filters.Chain(router.New(routes),
		filters.GrowStack,
		filters.AuditID,
		filters.Recover,
		filters.RequestInfo,
		filters.MaxBodySize(3*1024*1024),
		compress,
		filters.Log(s.log),
		filters.Timeout(cfg.RequestTimeout),
		filters.AuthenticateOr(auth.authenticator(tlsCfg.ClientCAs), filters.PublicPath,
			filters.FailedAuthenticationAudit(auditCfg, filters.Unauthorized)),
		// Audit reads the Impersonate-* headers before Impersonate acts
		// on them, as upstream's audit filter runs before impersonation.
		filters.Audit(auditCfg),
		filters.Impersonate(s.authz.chain),
		filters.Classify(apf.current),
		filters.Authorize(s.authz.chain),
		filters.AuditAllowed,
		filters.Instrument(s.metrics, served(reg)),
		filters.MaxWatchesPerUser(cfg.MaxWatchesPerUser),
		filters.FairQueue(fairQueues(cfg.MaxRequestsInflight)),
	)

	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	s.Addr = ln.Addr()
	host := cfg.BindAddress
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	s.URL = "https://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	s.Kubeconfig = filepath.Join(cfg.DataDir, "admin.kubeconfig")
	if err := s.PKI.WriteKubeconfig(s.Kubeconfig, s.URL); err != nil {
		ln.Close()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := untilAvailable(ctx, "creating the kubernetes Service", startupPatience, func(ctx context.Context) error {
		return s.createKubernetesService(ctx, ips, ln.Addr().(*net.TCPAddr).Port)
	}); err != nil {
		ln.Close()
		return nil, err
	}
	s.kubernetesServiceEnsured.Store(true)
	lease := newIdentityLease(s)
	s.background.Go(func() { lease.run(bgCtx) })
	s.http = &http.Server{
		Handler:           chain,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.http.RegisterOnShutdown(s.handler.StopWatches)
	go func() {
		defer close(s.done)
		if err := s.http.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr <- err
		}
	}()
	attrs := []any{"url", s.URL, "kubeconfig", s.Kubeconfig, "dataDir", cfg.DataDir}
	if s.etcdServer != nil {
		// For etcdctl, and for the load generator's raw etcd puts.
		attrs = append(attrs, "etcd", strings.Join(s.etcdServer.Endpoints(), ","))
	}
	s.log.Info("crdserver serving", attrs...)
	return s, nil
}

// newNodePorts is the node port allocator. Its records live under a key
// of their own: upstream keeps a bitmap of the range instead, which
// replicas could not share safely without rewriting it whole on every
// allocation.
func (s *Server) newNodePorts() (*builtin.NodePorts, error) {
	return builtin.NewNodePorts(s.cfg.ServiceNodePortRange, s.raw,
		s.cfg.EtcdPrefix+"/crdserver/servicenodeports/", keyPrefix(s.cfg.EtcdPrefix, servicesGR))
}

// served reports whether a request names a resource, version and
// subresource the registry serves: only those get their own labels in the
// request metrics.
func served(reg *registry.Registry) func(*request.Info) bool {
	return func(info *request.Info) bool {
		def, ok := reg.Current().Lookup(info.APIGroup, info.Resource)
		if !ok {
			return false
		}
		v, ok := def.ServedVersion(info.APIVersion)
		if !ok {
			return false
		}
		switch info.Subresource {
		case "":
			return true
		case "status":
			return v.Subresources.Status
		case "scale":
			return v.Subresources.Scale != nil
		}
		return slices.ContainsFunc(v.Subresources.Other, func(o registry.OtherSubresource) bool { return o.Name == info.Subresource })
	}
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.VerifyClientCertIfGiven,
		ClientCAs:  s.PKI.ClientCAPool,
		NextProtos: []string{"h2", "http/1.1"},
	}
	cfg.Certificates = []tls.Certificate{s.PKI.ServingCert}
	if s.cfg.TLSCertFile != "" || s.cfg.TLSPrivateKeyFile != "" {
		c, err := certs.LoadServing(s.cfg.TLSCertFile, s.cfg.TLSPrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if s.cfg.ClientCAFile != "" {
		pool, err := certs.LoadCAPool(s.cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		// The generated admin certificate keeps working beside the given CA.
		merged := pool
		if ok := merged.AppendCertsFromPEM(s.PKI.CAPEM); !ok {
			return nil, errors.New("client CA: cannot add the generated CA")
		}
		cfg.ClientCAs = merged
	}
	return cfg, nil
}

// startStorage starts the embedded etcd, or connects to the external one,
// or starts memory storage.
func (s *Server) startStorage(ctx context.Context) error {
	if s.cfg.Storage != "" && s.cfg.Storage != StorageEtcd {
		return s.startMemoryStorage()
	}
	cfg := etcd.Config{
		Endpoints: s.cfg.EtcdServers,
		CAFile:    s.cfg.EtcdCAFile,
		CertFile:  s.cfg.EtcdCertFile,
		KeyFile:   s.cfg.EtcdKeyFile,
	}
	if len(cfg.Endpoints) == 0 {
		es, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(s.cfg.DataDir, "etcd")})
		if err != nil {
			return fmt.Errorf("starting embedded etcd: %w", err)
		}
		s.etcdServer = es
		cfg.Endpoints = es.Endpoints()
		// The member is alone in its cluster and in this process: reads
		// and writes need no gRPC, and its revision no quorum read.
		cfg.KV = es.KV()
		cfg.LocalRevision = es.Revision
	}
	b, err := etcd.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting to etcd: %w", err)
	}
	s.backend = b
	return nil
}

// createInitialNamespaces creates default, kube-system, kube-public and
// kube-node-lease unless they exist. Creates are compare-and-swap, so
// replicas starting together agree.
func (s *Server) createInitialNamespaces(ctx context.Context) error {
	st, _ := s.stores.Store(builtin.Namespaces().GroupResource())
	for _, name := range builtin.InitialNamespaces {
		if _, err := st.Storage.Get(ctx, st.Key("", name)); err == nil {
			continue
		}
		obj := builtin.NewNamespace(name, time.Now())
		data, err := handler.EncodeStored(obj)
		if err != nil {
			return err
		}
		if _, err := st.Storage.Create(ctx, st.Key("", name), data); err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// Shutdown stops accepting, ends watches and the background loops
// (controllers, compactor), waits for in-flight requests and for those
// loops to return (together bounded by ShutdownTimeout), then stops the
// caches and closes storage. Loops still running at the deadline are
// reported in the error and storage is closed under them.
func (s *Server) Shutdown() error {
	s.shuttingDown.Store(true)
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if s.stopBackground != nil {
		s.stopBackground()
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		<-s.done
	}
	if s.auditLog != nil {
		if err := s.auditLog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("audit log: %w", err))
		}
	}
	stopped := make(chan struct{})
	go func() {
		s.background.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("background loops still running after %s: %w", s.cfg.ShutdownTimeout, ctx.Err()))
	}
	if s.cancel != nil {
		s.cancel()
	}
	if s.stores != nil {
		s.stores.stop()
	}
	if s.backend != nil {
		if err := s.backend.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.etcdServer != nil {
		if err := s.etcdServer.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// synced reports whether every cache is filled and the CRDs served.
func (s *Server) synced() bool { return s.stores.ready() && s.crds.served.Load() }

// bootstrapped reports whether the RBAC bootstrap roles exist (always
// when RBAC is not the authorizer).
func (s *Server) bootstrapped() bool { return s.authz.mode != ModeRBAC || s.authz.ready() }

// settled reports whether the rest of start-up's one-time work is done:
// the system PriorityClasses, the default ServiceCIDR and
// extension-apiserver-authentication stored, the identity Lease written, the aggregated
// ClusterRoles filled. Code that runs after the drop below
// faults back in.
func (s *Server) settled() bool {
	return s.priorityClassesEnsured.Load() && s.serviceCIDREnsured.Load() && s.leaseWritten.Load() && s.authInfoPublished.Load() && s.apfEnsured.Load() &&
		(s.authz.mode != ModeRBAC || s.authz.aggregated())
}

// dropStartupPages waits until start-up is over (readyz's checks of the
// caches and RBAC pass, and the server settled), returns the heap start-up
// freed, then gives back the resident pages of the binary's
// code and read-only data that start-up mapped: the init functions of every
// linked package and code run once, about 25 MB of an idle server's RSS.
// What serving needs faults back in from the page cache (see textpages for
// why this is sound). Only Run does it: crdtest's servers share their
// process with the tests.
func (s *Server) dropStartupPages(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !s.synced() || !s.bootstrapped() || !s.settled() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	// Start-up's garbage (the bootstrap policy built and written, the
	// caches filled) goes back to the system now rather than when the
	// scavenger comes to it: an idle server's heap is a few megabytes.
	openapi.ReleaseLibrary()
	debug.FreeOSMemory()
	ranges, err := textpages.Drop()
	if err != nil {
		s.log.Warn("dropping start-up pages", "err", err)
		return
	}
	var rss int64
	for _, r := range ranges {
		rss += r.Rss
	}
	s.log.Debug("dropped start-up pages of the binary", "mappings", len(ranges), "residentBytes", rss)
}

// healthEndpoints are /healthz, /livez and /readyz with upstream's check
// names: live while storage answers and every post-start hook is done;
// ready besides once every cache is filled, until shutdown begins.
func (s *Server) healthEndpoints(apf *apfConfig) []health.Endpoint {
	ok := func(context.Context) error { return nil }
	etcd := health.Check{Name: "etcd", Func: s.backend.Healthy}
	hooks := postStartHookChecks(s.postStartHooks(apf))
	live := append([]health.Check{{Name: "ping", Func: ok}, {Name: "log", Func: ok}, etcd}, hooks...)
	ready := []health.Check{{Name: "ping", Func: ok}, {Name: "log", Func: ok}, etcd,
		{Name: "etcd-readiness", Func: s.backend.Healthy},
		{Name: "informer-sync", Func: func(context.Context) error {
			if !s.synced() {
				return errors.New("watch caches or CRDs not yet served")
			}
			return nil
		}}}
	ready = append(ready, hooks...)
	ready = append(ready, health.Check{Name: "shutdown", Func: func(context.Context) error {
		if s.shuttingDown.Load() {
			return errors.New("process is shutting down")
		}
		return nil
	}})
	return []health.Endpoint{
		{Name: "healthz", Checks: live},
		{Name: "livez", Checks: live},
		{Name: "readyz", Checks: ready},
	}
}
