package main

import (
	"slices"
	"strings"
)

// Discovery documents list what a server serves, and crdserver knowingly
// serves a little more than kube-apiserver (two legacy versions), and
// has served less (resources below, when there are any). A "discovery"
// line compares the documents whole after taking those out: upstream's
// answer without the resources below, crdserver's without the versions
// below. Anything else either lists, or lists otherwise, is a difference.

// unservedResources are the resources and subresources, by group/version,
// that kube-apiserver 1.37.2 lists and crdserver does not serve: none
// now, since pods/resize and services/proxy are served.
var unservedResources = map[string][]string{}

// unservedGroups are the groups crdserver serves none of: none now, since
// flowcontrol.apiserver.k8s.io is served.
var unservedGroups []string

// beyondUpstream are the group/versions crdserver serves and kube-apiserver
// 1.37.2 does not: the legacy CRD API (issue 9) and the webhook
// configurations' v1beta1.
var beyondUpstream = []string{"admissionregistration.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1"}

// unlistedRootPaths are the paths kube-apiserver 1.37.2's root index
// lists and crdserver does not serve, beside its unserved groups: none
// now, since the component pages /flagz and /statusz are served.
// unlistedHealthChecks are the health checks crdserver does not run (its
// post-start hooks among them, the RBAC roles' check included:
// crdserver's is /readyz's alone), below each health endpoint.
var (
	unlistedRootPaths    []string
	unlistedHealthChecks = []string{"autoregister-completion", "loopback-serving-certificate", "etcd-readiness"}
)

// comparableDiscovery is doc, a decoded discovery document from server,
// without what one server knowingly serves and the other does not, and
// without the servers' addresses. The root index (GET /, which has no
// kind) is compared by its paths of what both serve.
func comparableDiscovery(server string, doc any) any {
	d, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	delete(d, "serverAddressByClientCIDRs")
	if _, ok := d["paths"]; ok && d["kind"] == nil {
		d["paths"] = slices.DeleteFunc(d["paths"].([]any), func(p any) bool {
			return !listedByBoth(server, p.(string))
		})
		return d
	}
	switch d["kind"] {
	case "APIResourceList":
		if server == "kube-apiserver" {
			gv, _ := d["groupVersion"].(string)
			d["resources"] = dropEach(d["resources"], func(r map[string]any) bool {
				return unserved(gv, r["name"])
			})
		}
	case "APIGroupList":
		d["groups"] = dropEach(d["groups"], func(g map[string]any) bool {
			return !keepGroup(server, g)
		})
	case "APIGroup":
		keepGroup(server, d)
	case "APIGroupDiscoveryList":
		d["items"] = dropEach(d["items"], func(g map[string]any) bool {
			name, _ := g["metadata"].(map[string]any)["name"].(string)
			if server == "kube-apiserver" && slices.Contains(unservedGroups, name) {
				return true
			}
			g["versions"] = dropEach(g["versions"], func(v map[string]any) bool {
				gv := groupVersion(name, v["version"])
				if server != "kube-apiserver" {
					return slices.Contains(beyondUpstream, gv)
				}
				v["resources"] = dropEach(v["resources"], func(r map[string]any) bool {
					res, _ := r["resource"].(string)
					r["subresources"] = dropEach(r["subresources"], func(s map[string]any) bool {
						return unserved(gv, res+"/"+s["subresource"].(string))
					})
					if s, _ := r["subresources"].([]any); len(s) == 0 {
						delete(r, "subresources")
					}
					return unserved(gv, res)
				})
				return false
			})
			return false
		})
	}
	return d
}

// listedByBoth reports whether p, a path server's root index lists, is
// one both servers serve.
func listedByBoth(server, p string) bool {
	if health, check, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/"); ok && slices.Contains([]string{"healthz", "livez", "readyz"}, health) {
		return !strings.HasPrefix(check, "poststarthook/") && !slices.Contains(unlistedHealthChecks, check)
	}
	if group, ok := strings.CutPrefix(p, "/apis/"); ok && group != "" {
		if server != "kube-apiserver" {
			return !slices.Contains(beyondUpstream, group)
		}
		group, _, _ = strings.Cut(group, "/")
		return !slices.Contains(unservedGroups, group)
	}
	return server != "kube-apiserver" || !slices.Contains(unlistedRootPaths, p)
}

// keepGroup drops from g, an APIGroup, the versions crdserver serves
// beyond upstream, and reports whether the group is one both serve.
func keepGroup(server string, g map[string]any) bool {
	name, _ := g["name"].(string)
	if server == "kube-apiserver" {
		return !slices.Contains(unservedGroups, name)
	}
	g["versions"] = dropEach(g["versions"], func(v map[string]any) bool {
		return slices.Contains(beyondUpstream, groupVersion(name, v["version"]))
	})
	return true
}

// unserved reports whether name, a resource or subresource of gv, is
// one crdserver does not serve, or belongs to one.
func unserved(gv string, name any) bool {
	n, _ := name.(string)
	parent, _, _ := strings.Cut(n, "/")
	return slices.Contains(unservedResources[gv], n) || slices.Contains(unservedResources[gv], parent)
}

func groupVersion(group string, version any) string {
	v, _ := version.(string)
	return strings.TrimPrefix(group+"/"+v, "/")
}

// dropEach returns list, a decoded JSON array of objects, without those
// drop reports true for.
func dropEach(list any, drop func(map[string]any) bool) any {
	l, ok := list.([]any)
	if !ok {
		return list
	}
	return slices.DeleteFunc(l, func(x any) bool {
		m, ok := x.(map[string]any)
		return ok && drop(m)
	})
}
