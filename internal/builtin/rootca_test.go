package builtin

import (
	"testing"
	"time"
)

// The publisher's ConfigMap holds the CA and its description; keeping it
// puts back what a client changed and reports a change only then.
func TestKeepRootCA(t *testing.T) {
	cm := NewRootCAConfigMap("ns", "PEM", time.Now())
	if KeepRootCA(cm, "PEM") {
		t.Error("a new ConfigMap needed keeping")
	}
	for name, change := range map[string]func(map[string]any){
		"emptied":        func(cm map[string]any) { cm["data"] = map[string]any{"ca.crt": ""} },
		"data added":     func(cm map[string]any) { cm["data"].(map[string]any)["extra"] = "x" },
		"no data":        func(cm map[string]any) { delete(cm, "data") },
		"no description": func(cm map[string]any) { delete(cm["metadata"].(map[string]any), "annotations") },
	} {
		cm := NewRootCAConfigMap("ns", "PEM", time.Now())
		md := cm["metadata"].(map[string]any)
		md["labels"] = map[string]any{"kept": "yes"}
		change(cm)
		if !KeepRootCA(cm, "PEM") {
			t.Errorf("%s: no change reported", name)
		}
		data, _ := cm["data"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if len(data) != 1 || data["ca.crt"] != "PEM" || ann[rootCADescriptionKey] != rootCADescription || md["labels"] == nil {
			t.Errorf("%s: kept as %v", name, cm)
		}
	}
}
