package main

import (
	"flag"

	"github.com/crdserver/crdserver/internal/server"
)

// authnFlags binds the authentication flags, named as upstream's.
func authnFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", `CSV file of static bearer tokens: token,user,uid,"group1,group2"`)
	fs.StringVar(&cfg.AuthenticationConfigFile, "authentication-config", "", "AuthenticationConfiguration (apiserver.config.k8s.io/v1) file with JWT (OIDC) issuers")
	fs.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", false, "let requests without credentials through as system:anonymous (group system:unauthenticated)")
	fs.StringVar(&cfg.ServiceAccountIssuer, "service-account-issuer", "", "issuer (iss) of service account tokens, whose signing key is kept in the data dir (default https://kubernetes.default.svc.cluster.local)")
}
