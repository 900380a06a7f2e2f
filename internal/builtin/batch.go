package builtin

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// Jobs and CronJobs are stored objects: no controller runs them (there
// are no pods), and their status is whatever a client writes to /status.
// They get upstream's defaults, its generated selector and pod labels
// for Jobs, and its validation of counts, the completion mode, the
// selector, the pod template's basics (containers, names, images, restart
// policy), the schedule and the time zone. Not checked: pod failure and
// success policies beyond their presence, the Job status rules, and the
// rest of upstream's pod validation.

// Jobs is the batch/v1 jobs resource.
func Jobs() *registry.Definition {
	k := kindDef{
		group: "batch", version: "v1", resource: "jobs", kind: "Job",
		categories: []string{"all"}, scope: registry.Namespaced, status: true,
		statusMetadata: registry.UserMetadata, selectable: []string{"status.successful"},
	}
	return k.definition(jobHooks{newKindHooks[batchv1.Job](k, jobRules{})})
}

type jobHooks struct {
	kindHooks[batchv1.Job, jobRules]
}

// OrphanDependentsByDefault: as upstream's batch/v1 Jobs, for backward
// compatibility (kubectl delete asks for background propagation), with
// upstream's warning.
func (jobHooks) OrphanDependentsByDefault() string {
	return "child pods are preserved by default when jobs are deleted; " +
		"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"
}

// RefuseFieldLabel implements registry.FieldLabelRefuser in the words of
// upstream's Job field label conversion.
func (jobHooks) RefuseFieldLabel(label string) string {
	return fmt.Sprintf("field label %q not supported for Job", label)
}

var (
	_ registry.CreatePreparer = jobHooks{}
	_ registry.FieldComputer  = jobHooks{}
	_ registry.Defaulter      = jobHooks{}
)

// Default is the kind's defaults and, as upstream's v1 defaulting does, a
// Job without labels takes its pod template's: metadata, which the round
// trip through the Go type leaves to the handler, so the map is set here.
func (h jobHooks) Default(obj map[string]any) {
	h.kindHooks.Default(obj)
	labelsFromTemplate(obj)
}

// labelsFromTemplate gives obj, a Job without labels, its pod template's
// labels.
func labelsFromTemplate(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	if l, _ := md["labels"].(map[string]any); len(l) > 0 {
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	tmd, _ := template["metadata"].(map[string]any)
	if l, ok := tmd["labels"].(map[string]any); ok && l != nil {
		md["labels"] = runtime.DeepCopyJSONValue(l)
	}
}

// Upstream's labels on a Job's pods, and its selector's.
const (
	jobNameLabel             = "batch.kubernetes.io/job-name"
	legacyJobNameLabel       = "job-name"
	controllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	legacyControllerUIDLabel = "controller-uid"
)

// PrepareForCreate defaults the job and, unless spec.manualSelector, gives
// it upstream's generated selector: the pod template is labelled with the
// job's name and uid, which the selector matches, and so is a Job that
// has no labels of its own.
func (h jobHooks) PrepareForCreate(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	uid, _ := md["uid"].(string)
	delete(obj, "status") // the Go type's empty status, as upstream's strategy resets it
	h.rewrite(obj, func(j *batchv1.Job) {
		defaultJob(j)
		if !ptr.Deref(j.Spec.ManualSelector, false) {
			generateJobSelector(j, name, uid)
		}
	})
	// Upstream defaults the Job again as it reads it back from storage:
	// one without labels takes the template's, generated ones included.
	labelsFromTemplate(obj)
	dropDisabledContainerFields(obj, "spec", "template", "spec")
}

func generateJobSelector(j *batchv1.Job, name, uid string) {
	t := &j.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for k, v := range map[string]string{legacyJobNameLabel: name, jobNameLabel: name, legacyControllerUIDLabel: uid, controllerUIDLabel: uid} {
		if _, ok := t.Labels[k]; !ok {
			t.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[controllerUIDLabel]; !ok {
		j.Spec.Selector.MatchLabels[controllerUIDLabel] = uid
	}
}

// ComputedFields gives status.successful, upstream's selectable field for
// status.succeeded.
func (h jobHooks) ComputedFields(obj map[string]any) map[string]string {
	j, _, err := h.Decode(obj)
	if err != nil {
		return nil
	}
	return map[string]string{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}
}

type jobRules struct{}

func (jobRules) defaults(j *batchv1.Job) { defaultJob(j) }

func (jobRules) podSpecPath() []string { return []string{"spec", "template", "spec"} }

func defaultJob(j *batchv1.Job) {
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr.To[int32](1)
	}
	setDefault(&s.Parallelism, 1)
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr.To[int32](6)
		}
	}
	if s.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = s.Template.Labels
	}
	defaultJobSpec(s)
}

// defaultJobSpec is what a Job and a CronJob's job template share.
func defaultJobSpec(s *batchv1.JobSpec) {
	if s.CompletionMode == nil {
		s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr.To(false)
	}
	defaultPodFailurePolicy(s.PodFailurePolicy)
	defaultPodTemplate(&s.Template)
}

// defaultPodFailurePolicy gives each pod condition a rule matches the
// status True.
func defaultPodFailurePolicy(p *batchv1.PodFailurePolicy) {
	if p == nil {
		return
	}
	for i := range p.Rules {
		for j := range p.Rules[i].OnPodConditions {
			if c := &p.Rules[i].OnPodConditions[j]; c.Status == "" {
				c.Status = corev1.ConditionTrue
			}
		}
	}
}

func (jobRules) validate(j, was *batchv1.Job) field.ErrorList {
	p := field.NewPath("spec")
	errs := validateJobSpec(&j.Spec, p)
	if j.Spec.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(j.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(j.Spec.Template.Labels)) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), j.Spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	if was == nil {
		return append(errs, validateGeneratedSelector(j)...)
	}
	errs = append(errs, apivalidation.ValidateImmutableField(j.Spec.Selector, was.Spec.Selector, p.Child("selector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(j.Spec.CompletionMode, was.Spec.CompletionMode, p.Child("completionMode"))...)
	if ptr.Deref(j.Spec.CompletionMode, "") != batchv1.IndexedCompletion {
		errs = append(errs, apivalidation.ValidateImmutableField(j.Spec.Completions, was.Spec.Completions, p.Child("completions"))...)
	}
	if !ptr.Deref(was.Spec.Suspend, false) {
		// A suspended job that never started may change its template.
		errs = append(errs, apivalidation.ValidateImmutableField(j.Spec.Template, was.Spec.Template, p.Child("template"))...)
	}
	return errs
}

// validateStatus checks a job's counts; the rules tying conditions,
// times and uncounted pods together are not checked.
func (jobRules) validateStatus(j *batchv1.Job) field.ErrorList {
	s, p := j.Status, field.NewPath("status")
	errs := nonNegatives(p, []string{"active", "succeeded", "failed"}, s.Active, s.Succeeded, s.Failed)
	errs = append(errs, nonNegative(s.Ready, p.Child("ready"))...)
	return append(errs, nonNegative(s.Terminating, p.Child("terminating"))...)
}

// validateGeneratedSelector checks, for a job without a manual selector,
// that its template carries the generated labels and its selector matches
// them.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if ptr.Deref(j.Spec.ManualSelector, false) || j.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	tp := field.NewPath("spec", "template", "metadata")
	expected := map[string]string{}
	for _, l := range []struct{ key, value string }{
		{legacyControllerUIDLabel, string(j.UID)}, {legacyJobNameLabel, j.Name},
		{controllerUIDLabel, string(j.UID)}, {jobNameLabel, j.Name},
	} {
		expected[l.key] = l.value
		switch v, ok := j.Spec.Template.Labels[l.key]; {
		case !ok:
			errs = append(errs, field.Required(tp.Child("labels").Key(l.key), "must be '"+l.value+"'"))
		case v != l.value:
			errs = append(errs, field.Invalid(tp.Child("labels").Key(l.key), j.Spec.Template.Labels, "must be '"+l.value+"'"))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec is what a Job and a CronJob's job template share: the
// counts, the completion mode and the pod template.
func validateJobSpec(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		v    *int32
	}{{"parallelism", s.Parallelism}, {"completions", s.Completions}, {"backoffLimit", s.BackoffLimit},
		{"ttlSecondsAfterFinished", s.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", s.BackoffLimitPerIndex}, {"maxFailedIndexes", s.MaxFailedIndexes}} {
		errs = append(errs, nonNegative(c.v, p.Child(c.name))...)
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*s.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	if s.MaxFailedIndexes != nil && s.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	indexed := false
	if m := s.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			indexed = true
			if s.Completions == nil {
				errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("completionMode"), *m, []string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
		}
	}
	if !indexed {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
		if s.SuccessPolicy != nil {
			errs = append(errs, field.Invalid(p.Child("successPolicy"), *s.SuccessPolicy, "requires indexed completion mode"))
		}
	}
	tp := p.Child("template")
	errs = append(errs, metav1validation.ValidateLabels(s.Template.Labels, tp.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(s.Template.Annotations, tp.Child("metadata", "annotations"))...)
	errs = append(errs, validatePodSpec(&s.Template.Spec, tp.Child("spec"))...)
	rp := tp.Child("spec", "restartPolicy")
	switch rp2 := s.Template.Spec.RestartPolicy; {
	case rp2 == corev1.RestartPolicyAlways || rp2 == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp2 != corev1.RestartPolicyOnFailure && rp2 != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, rp2, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	case s.PodFailurePolicy != nil && rp2 != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, rp2, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// Upstream's job columns (the wide ones at priority 1).
func (jobRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}
}

func (jobRules) cells(j *batchv1.Job) []any {
	var completions string
	switch par := ptr.Deref(j.Spec.Parallelism, 0); {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case par > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, par)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch st := j.Status; {
	case st.StartTime == nil:
	case st.CompletionTime == nil:
		took = duration.HumanDuration(time.Since(st.StartTime.Time))
	default:
		took = duration.HumanDuration(st.CompletionTime.Sub(st.StartTime.Time))
	}
	names, images := containerCells(&j.Spec.Template)
	return []any{j.Name, jobStatusCell(j), completions, took, age(&j.ObjectMeta), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
}

// jobStatusCell is upstream's Status cell: the first of these that holds.
func jobStatusCell(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// CronJobs is the batch/v1 cronjobs resource: nothing runs on schedule.
func CronJobs() *registry.Definition {
	return define[batchv1.CronJob](kindDef{
		group: "batch", version: "v1", resource: "cronjobs", kind: "CronJob",
		shortNames: []string{"cj"}, categories: []string{"all"}, scope: registry.Namespaced, status: true,
		statusMetadata: registry.UserMetadata,
	}, cronJobRules{})
}

type cronJobRules struct{}

func (cronJobRules) podSpecPath() []string {
	return []string{"spec", "jobTemplate", "spec", "template", "spec"}
}

func (cronJobRules) defaults(cj *batchv1.CronJob) {
	s := &cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	setDefault(&s.SuccessfulJobsHistoryLimit, 3)
	setDefault(&s.FailedJobsHistoryLimit, 1)
	// Upstream defaults a Job's spec on the Job (its completions,
	// parallelism, backoff limit, completion mode...), not in a CronJob's
	// template: there only what its nested types default.
	js := &s.JobTemplate.Spec
	defaultPodFailurePolicy(js.PodFailurePolicy)
	defaultPodTemplate(&js.Template)
}

// validTimeZoneCharacters is upstream's rule for each part of a zone name.
var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func (cronJobRules) validate(cj, was *batchv1.CronJob) field.ErrorList {
	s, p := &cj.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if s.Schedule != "" {
		allowTZ := was != nil && strings.Contains(was.Spec.Schedule, "TZ")
		errs = append(errs, validateSchedule(s.Schedule, allowTZ, s.TimeZone, p.Child("schedule"))...)
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*s.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	}
	if was == nil || !ptr.Equal(was.Spec.TimeZone, s.TimeZone) {
		errs = append(errs, validateTimeZone(s.TimeZone, p.Child("timeZone"))...)
	}
	switch cp := p.Child("concurrencyPolicy"); s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, s.ConcurrencyPolicy, []string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
	}
	jp := p.Child("jobTemplate", "spec")
	errs = append(errs, validateJobSpec(&s.JobTemplate.Spec, jp)...)
	if sel := s.JobTemplate.Spec.Selector; sel != nil {
		errs = append(errs, field.Invalid(jp.Child("selector"), sel, "`selector` will be auto-generated"))
	}
	if m := s.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(jp.Child("manualSelector"), m, []string{"nil", "false"}))
	}
	errs = append(errs, nonNegative(s.SuccessfulJobsHistoryLimit, p.Child("successfulJobsHistoryLimit"))...)
	errs = append(errs, nonNegative(s.FailedJobsHistoryLimit, p.Child("failedJobsHistoryLimit"))...)
	if was == nil && len(cj.Name) > 52 {
		// The controller suffixes job names with 11 characters.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	if s.Schedule == "" {
		// Upstream's declarative validation says so, after the rest.
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	}
	return errs
}

func validateSchedule(schedule string, allowTZ bool, tz *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := parseCronSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(p, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && tz != nil:
		errs = append(errs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// parseCronSchedule parses a standard cron schedule as upstream does,
// turning the parser's panics into errors.
func parseCronSchedule(schedule string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}

func (cronJobRules) columns() []metav1.TableColumnDefinition {
	spec, status := batchv1.CronJobSpec{}.SwaggerDoc(), batchv1.CronJobStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Schedule", Type: "string", Description: spec["schedule"]},
		{Name: "Timezone", Type: "string", Description: spec["timeZone"]},
		{Name: "Suspend", Type: "boolean", Description: spec["suspend"]},
		{Name: "Active", Type: "integer", Description: status["active"]},
		{Name: "Last Schedule", Type: "string", Description: status["lastScheduleTime"]},
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}
}

func (cronJobRules) cells(cj *batchv1.CronJob) []any {
	last := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = metatable.ConvertToHumanReadableDateType(*t)
	}
	tz := "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	suspend := "<unset>" // upstream's printBoolPtr
	switch {
	case cj.Spec.Suspend == nil:
	case *cj.Spec.Suspend:
		suspend = "True"
	default:
		suspend = "False"
	}
	t := &cj.Spec.JobTemplate.Spec
	names, images := containerCells(&t.Template)
	return []any{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, age(&cj.ObjectMeta), names, images, metav1.FormatLabelSelector(t.Selector)}
}
