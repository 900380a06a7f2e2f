package main

import (
	"reflect"
	"testing"
)

func TestReadReport(t *testing.T) {
	res, err := readReport("testdata/junit_01.xml")
	if err != nil {
		t.Fatal(err)
	}
	const crd = "[sig-api-machinery] CustomResourceDefinition resources creating/deleting custom resource definition objects works [Conformance]"
	if want := []string{crd}; !reflect.DeepEqual(res.passed, want) {
		t.Errorf("passed = %q, want %q", res.passed, want)
	}
	wantFailed := []outcome{
		{"[sig-api-machinery] FieldValidation should detect unknown fields [Conformance]", `expected error "unknown field", got nil`},
		{"[sig-api-machinery] Watchers should observe", "A node timeout occurred"},
	}
	if !reflect.DeepEqual(res.failed, wantFailed) {
		t.Errorf("failed = %q, want %q", res.failed, wantFailed)
	}
	wantSkipped := []outcome{{"[sig-api-machinery] Discovery should validate PreferredVersion", "Server version v0.0.0 is older than v1.19"}}
	if !reflect.DeepEqual(res.skipped, wantSkipped) {
		t.Errorf("skipped = %q, want %q", res.skipped, wantSkipped)
	}
	if res.filtered != 1 {
		t.Errorf("filtered = %d, want 1", res.filtered)
	}
	wantSuite := []outcome{{"[ReportAfterSuite] Kubernetes e2e suite report", "could not write"}}
	if !reflect.DeepEqual(res.suiteFailures, wantSuite) {
		t.Errorf("suite failures = %q, want %q", res.suiteFailures, wantSuite)
	}
	if res.total() != 4 {
		t.Errorf("total = %d, want 4", res.total())
	}
}
