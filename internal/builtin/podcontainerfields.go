package builtin

// dropDisabledContainerFields clears, in the pod spec at path of a
// request body, the container fields whose feature gates are off in
// kube-apiserver 1.37.2: lifecycle stop signals (ContainerStopSignals; a
// lifecycle left empty goes too), gRPC probe modes
// (GRPCContainerProbeTLS), HTTP probe and hook protocols
// (H2CContainerProbe) and volume mounts' bind options
// (VolumeBindMountOptions). Upstream's strategy drops them after the
// field manager has recorded the writer's fields (which keep naming
// them), so this runs in PrepareForCreate and PrepareForUpdate, not with
// the defaults. Upstream keeps them when the old object already used
// them; crdserver never stores them, so none does.
func dropDisabledContainerFields(obj map[string]any, path ...string) {
	spec, _ := nested(obj, path...).(map[string]any)
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				dropDisabledFieldsOf(c)
			}
		}
	}
}

func dropDisabledFieldsOf(c map[string]any) {
	if l, ok := c["lifecycle"].(map[string]any); ok {
		if _, had := l["stopSignal"]; had {
			delete(l, "stopSignal")
			if len(l) == 0 {
				delete(c, "lifecycle")
			}
		}
		deleteAt(l, "postStart", "httpGet", "protocol")
		deleteAt(l, "preStop", "httpGet", "protocol")
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		deleteAt(c[probe], "httpGet", "protocol")
		deleteAt(c[probe], "grpc", "mode")
	}
	ms, _ := c["volumeMounts"].([]any)
	for _, m := range ms {
		deleteAt(m, "bindMountOptions")
	}
}

// deleteAt deletes the last of keys from the map the others lead to from
// m, if they lead to one.
func deleteAt(m any, keys ...string) {
	for _, k := range keys[:len(keys)-1] {
		mm, ok := m.(map[string]any)
		if !ok {
			return
		}
		m = mm[k]
	}
	if mm, ok := m.(map[string]any); ok {
		delete(mm, keys[len(keys)-1])
	}
}
