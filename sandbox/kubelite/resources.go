package kubelite

import (
	"crypto/sha256"
	"encoding/base64"
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resource describes one served resource: its REST names, its Go type, and
// the few strategy choices in which the real registry differs between kinds.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	namespaced bool
	shortNames []string
	categories []string
	typ        reflect.Type // the struct type, e.g. corev1.Pod

	status     bool     // has a status subresource (spec/status split on update)
	keepStatus bool     // create keeps the posted status (nodes, namespaces)
	generation bool     // metadata.generation tracks spec changes
	graceful   bool     // deletion honours a grace period (pods)
	returnObj  bool     // delete answers the deleted object, not a Status
	upsert     bool     // update of a missing object creates it
	rvRequired bool     // an update must name the resourceVersion it replaces
	extraSubs  []string // further subresources served (eviction)
	noDelColl  bool     // no deletecollection verb (namespaces)
	storedAs   string   // the group/version/kind stored, when not gvr's (events.k8s.io events)

	nameFn func(name string, prefix bool) []string
	// fields adds the kind's own field-selector fields; nil: only metadata.name/namespace.
	fields func(obj runtime.Object, set fields.Set)
}

func (r *resource) gr() schema.GroupResource { return r.gvr.GroupResource() }
func (r *resource) gk() schema.GroupKind     { return schema.GroupKind{Group: r.gvr.Group, Kind: r.kind} }
func (r *resource) gvk() schema.GroupVersionKind {
	return r.gvr.GroupVersion().WithKind(r.kind)
}

// new returns a new empty object of the resource's type.
func (r *resource) new() runtime.Object { return reflect.New(r.typ).Interface().(runtime.Object) }

// storageVersionHash is what discovery reports, as the real apiserver computes it.
func (r *resource) storageVersionHash() string {
	stored := r.gvr.Group + "/" + r.gvr.Version + "/" + r.kind
	if r.storedAs != "" {
		stored = r.storedAs
	}
	sum := sha256.Sum256([]byte(stored))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

var all = []string{"all"}

// resources lists every served resource; discovery orders groups and
// resources as listed here.
var resources = []*resource{
	// core/v1
	{gvr: core("namespaces"), kind: "Namespace", shortNames: []string{"ns"}, typ: typeOf(corev1.Namespace{}),
		status: true, keepStatus: true, returnObj: true, noDelColl: true, nameFn: apivalidation.NameIsDNSLabel,
		fields: func(o runtime.Object, s fields.Set) { s["status.phase"] = string(o.(*corev1.Namespace).Status.Phase) }},
	{gvr: core("nodes"), kind: "Node", shortNames: []string{"no"}, typ: typeOf(corev1.Node{}), status: true, keepStatus: true,
		fields: func(o runtime.Object, s fields.Set) {
			s["spec.unschedulable"] = strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)
		}},
	{gvr: core("pods"), kind: "Pod", namespaced: true, shortNames: []string{"po"}, categories: all, typ: typeOf(corev1.Pod{}),
		status: true, generation: true, graceful: true, returnObj: true, extraSubs: []string{"eviction"}, fields: podFields},
	{gvr: core("secrets"), kind: "Secret", namespaced: true, typ: typeOf(corev1.Secret{}),
		fields: func(o runtime.Object, s fields.Set) { s["type"] = string(o.(*corev1.Secret).Type) }},
	{gvr: core("configmaps"), kind: "ConfigMap", namespaced: true, shortNames: []string{"cm"}, typ: typeOf(corev1.ConfigMap{})},
	{gvr: core("serviceaccounts"), kind: "ServiceAccount", namespaced: true, shortNames: []string{"sa"}, typ: typeOf(corev1.ServiceAccount{}), returnObj: true},
	{gvr: core("services"), kind: "Service", namespaced: true, shortNames: []string{"svc"}, categories: all, typ: typeOf(corev1.Service{}),
		status: true, returnObj: true, upsert: true, nameFn: apivalidation.NameIsDNS1035Label},
	{gvr: core("endpoints"), kind: "Endpoints", namespaced: true, shortNames: []string{"ep"}, typ: typeOf(corev1.Endpoints{}), upsert: true},
	{gvr: core("events"), kind: "Event", namespaced: true, shortNames: []string{"ev"}, typ: typeOf(corev1.Event{}), upsert: true, fields: eventFields},
	{gvr: core("persistentvolumes"), kind: "PersistentVolume", shortNames: []string{"pv"}, typ: typeOf(corev1.PersistentVolume{}), status: true, returnObj: true},
	{gvr: core("persistentvolumeclaims"), kind: "PersistentVolumeClaim", namespaced: true, shortNames: []string{"pvc"}, typ: typeOf(corev1.PersistentVolumeClaim{}), status: true, returnObj: true},
	// apps/v1
	{gvr: apps("daemonsets"), kind: "DaemonSet", namespaced: true, shortNames: []string{"ds"}, categories: all, typ: typeOf(appsv1.DaemonSet{}), status: true, generation: true},
	{gvr: apps("deployments"), kind: "Deployment", namespaced: true, shortNames: []string{"deploy"}, categories: all, typ: typeOf(appsv1.Deployment{}), status: true, generation: true},
	{gvr: apps("replicasets"), kind: "ReplicaSet", namespaced: true, shortNames: []string{"rs"}, categories: all, typ: typeOf(appsv1.ReplicaSet{}), status: true, generation: true},
	{gvr: apps("statefulsets"), kind: "StatefulSet", namespaced: true, shortNames: []string{"sts"}, categories: all, typ: typeOf(appsv1.StatefulSet{}), status: true, generation: true},
	// batch/v1
	{gvr: gv("batch", "v1", "jobs"), kind: "Job", namespaced: true, categories: all, typ: typeOf(batchv1.Job{}), status: true, generation: true},
	// coordination.k8s.io/v1
	{gvr: gv("coordination.k8s.io", "v1", "leases"), kind: "Lease", namespaced: true, typ: typeOf(coordinationv1.Lease{}), upsert: true, rvRequired: true},
	// discovery.k8s.io/v1
	{gvr: gv("discovery.k8s.io", "v1", "endpointslices"), kind: "EndpointSlice", namespaced: true, typ: typeOf(discoveryv1.EndpointSlice{}), generation: true},
	// events.k8s.io/v1
	{gvr: gv("events.k8s.io", "v1", "events"), kind: "Event", namespaced: true, shortNames: []string{"ev"}, typ: typeOf(eventsv1.Event{}), upsert: true, storedAs: "/v1/Event"},
	// policy/v1
	{gvr: gv("policy", "v1", "poddisruptionbudgets"), kind: "PodDisruptionBudget", namespaced: true, shortNames: []string{"pdb"}, typ: typeOf(policyv1.PodDisruptionBudget{}), status: true, generation: true, rvRequired: true},
	// rbac.authorization.k8s.io/v1 (stored, not enforced)
	{gvr: gv("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), kind: "ClusterRoleBinding", typ: typeOf(rbacv1.ClusterRoleBinding{}), nameFn: pathSegmentName, upsert: true},
	{gvr: gv("rbac.authorization.k8s.io", "v1", "clusterroles"), kind: "ClusterRole", typ: typeOf(rbacv1.ClusterRole{}), nameFn: pathSegmentName, upsert: true},
	{gvr: gv("rbac.authorization.k8s.io", "v1", "rolebindings"), kind: "RoleBinding", namespaced: true, typ: typeOf(rbacv1.RoleBinding{}), nameFn: pathSegmentName, upsert: true},
	{gvr: gv("rbac.authorization.k8s.io", "v1", "roles"), kind: "Role", namespaced: true, typ: typeOf(rbacv1.Role{}), nameFn: pathSegmentName, upsert: true},
	// scheduling.k8s.io/v1
	{gvr: gv("scheduling.k8s.io", "v1", "priorityclasses"), kind: "PriorityClass", shortNames: []string{"pc"}, typ: typeOf(schedulingv1.PriorityClass{}), generation: true},
	// storage.k8s.io/v1
	{gvr: gv("storage.k8s.io", "v1", "storageclasses"), kind: "StorageClass", shortNames: []string{"sc"}, typ: typeOf(storagev1.StorageClass{}), returnObj: true},
}

func core(res string) schema.GroupVersionResource { return gv("", "v1", res) }
func apps(res string) schema.GroupVersionResource { return gv("apps", "v1", res) }
func gv(group, version, res string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: res}
}
func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

var (
	byGVR  = map[schema.GroupVersionResource]*resource{}
	byType = map[reflect.Type]*resource{}
)

func init() {
	for _, r := range resources {
		r.singular = lower(r.kind)
		if r.nameFn == nil {
			r.nameFn = apivalidation.NameIsDNSSubdomain
		}
		byGVR[r.gvr] = r
		if _, dup := byType[r.typ]; !dup {
			byType[r.typ] = r
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// pathSegmentName is the name validation of RBAC objects.
func pathSegmentName(name string, prefix bool) []string {
	if !prefix && (name == "." || name == "..") {
		return []string{`may not be '` + name + `'`}
	}
	var errs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			errs = append(errs, `may not contain '`+bad+`'`)
		}
	}
	return errs
}

func podFields(o runtime.Object, s fields.Set) {
	p := o.(*corev1.Pod)
	s["spec.nodeName"] = p.Spec.NodeName
	s["spec.restartPolicy"] = string(p.Spec.RestartPolicy)
	s["spec.schedulerName"] = p.Spec.SchedulerName
	s["spec.serviceAccountName"] = p.Spec.ServiceAccountName
	s["spec.hostNetwork"] = strconv.FormatBool(p.Spec.HostNetwork)
	s["status.phase"] = string(p.Status.Phase)
	s["status.podIP"] = p.Status.PodIP
	s["status.nominatedNodeName"] = p.Status.NominatedNodeName
	if len(p.Status.PodIPs) > 0 {
		s["status.podIPs"] = p.Status.PodIPs[0].IP
	} else {
		s["status.podIPs"] = ""
	}
}

func eventFields(o runtime.Object, s fields.Set) {
	e := o.(*corev1.Event)
	s["involvedObject.kind"] = e.InvolvedObject.Kind
	s["involvedObject.namespace"] = e.InvolvedObject.Namespace
	s["involvedObject.name"] = e.InvolvedObject.Name
	s["involvedObject.uid"] = string(e.InvolvedObject.UID)
	s["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	s["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	s["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	s["reason"] = e.Reason
	s["reportingComponent"] = e.ReportingController
	s["source"] = e.Source.Component
	s["type"] = e.Type
}
