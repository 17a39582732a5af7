package kubelite

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// maxEvents is how many past changes a Store keeps for watches resuming
// from a resourceVersion; older ones answer 410 Gone, as after a compaction.
const maxEvents = 10000

// bookmarkInterval is how often a watch allowing bookmarks gets one, as
// from the real watch cache.
const bookmarkInterval = time.Minute

// Store is one cluster's datastore (what etcd holds for k3s), shared by
// every server of the cluster. It is safe for concurrent use.
//
// Stored objects are never modified in place: every write stores a new
// object, so readers may keep what they got under the lock.
type Store struct {
	mu      sync.Mutex
	rv      uint64                                  // the cluster-wide resourceVersion: last write
	objects map[*resource]map[string]runtime.Object // by namespace/name
	log     []event                                 // the last keep writes, oldest first
	keep    int                                     // maxEvents, but in tests
	tick    time.Duration                           // bookmarkInterval, but in tests
	changed chan struct{}                           // closed and replaced on every write
}

// event is one write, as watches report it.
type event struct {
	rv       uint64
	res      *resource
	typ      watch.EventType
	obj, old runtime.Object // old: the previous state (nil when ADDED)
}

// NewStore returns a store holding the namespaces every cluster starts
// with: default, kube-system, kube-public and kube-node-lease.
func NewStore() *Store {
	s := &Store{objects: map[*resource]map[string]runtime.Object{}, changed: make(chan struct{}), keep: maxEvents, tick: bookmarkInterval}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if _, err := s.create(byGVR[core("namespaces")], "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, false); err != nil {
			panic(err)
		}
	}
	return s
}

// resourceOf returns the served resource of a typed object.
func resourceOf(obj runtime.Object) (*resource, error) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || byType[t.Elem()] == nil {
		return nil, fmt.Errorf("kubelite: %T is not a served kind", obj)
	}
	return byType[t.Elem()], nil
}

// Get reads the object namespace/name (namespace "" for cluster-scoped
// kinds) into obj, a pointer to a served k8s.io/api type such as
// *corev1.Node. A missing object is a NotFound error (apierrors.IsNotFound).
func (s *Store) Get(namespace, name string, obj runtime.Object) error {
	res, err := resourceOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	cur, err := s.get(res, namespace, name)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cur.DeepCopyObject()).Elem())
	return nil
}

// Put creates obj, or replaces the stored object of its namespace and name
// whatever its resourceVersion and uid (status included), as the API's
// create and update would. obj is updated to what was stored (uid,
// resourceVersion…).
func (s *Store) Put(obj runtime.Object) error {
	res, err := resourceOf(obj)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	in := obj.DeepCopyObject()
	s.mu.Lock()
	var out runtime.Object
	if _, err = s.get(res, m.GetNamespace(), m.GetName()); apierrors.IsNotFound(err) {
		out, err = s.create(res, m.GetNamespace(), in.DeepCopyObject(), false)
		if err == nil && res.status && !res.keepStatus {
			out, err = s.update(res, m.GetNamespace(), m.GetName(), "status", false, replaceWith(in, false))
		}
	} else if err == nil {
		out, err = s.update(res, m.GetNamespace(), m.GetName(), "", false, replaceWith(in, false))
		if err == nil && res.status {
			out, err = s.update(res, m.GetNamespace(), m.GetName(), "status", false, replaceWith(in, false))
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(out.DeepCopyObject()).Elem())
	return nil
}

// Delete deletes the object namespace/name of obj's kind at once, whatever
// its finalizers or grace period (as a datastore edit would).
func (s *Store) Delete(namespace, name string, obj runtime.Object) error {
	res, err := resourceOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.get(res, namespace, name)
	if err != nil {
		return err
	}
	s.remove(res, cur)
	return nil
}

// replaceWith is an update function answering a copy of obj; with
// keepRV the object's own resourceVersion (and uid) are preconditions,
// otherwise the update is unconditional.
func replaceWith(obj runtime.Object, keepRV bool) func(runtime.Object) (runtime.Object, error) {
	return func(cur runtime.Object) (runtime.Object, error) {
		out := obj.DeepCopyObject()
		if !keepRV && cur != nil {
			metaOf(out).SetResourceVersion(metaOf(cur).GetResourceVersion())
			metaOf(out).SetUID(metaOf(cur).GetUID())
		}
		return out, nil
	}
}

func key(namespace, name string) string { return namespace + "/" + name }

func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// get returns the stored object (not a copy: do not modify it).
func (s *Store) get(res *resource, namespace, name string) (runtime.Object, error) {
	if !res.namespaced {
		namespace = ""
	}
	if obj, ok := s.objects[res][key(namespace, name)]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(res.gr(), name)
}

// list returns the stored objects of res in namespace ("": all), sorted
// by namespace and name, as etcd returns them.
func (s *Store) list(res *resource, namespace string) []runtime.Object {
	keys := make([]string, 0, len(s.objects[res]))
	for k, obj := range s.objects[res] {
		if namespace == "" || metaOf(obj).GetNamespace() == namespace {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = s.objects[res][k]
	}
	return out
}

func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m
}

// commit stores obj (nil: removes old) at the next resourceVersion and
// tells watches.
func (s *Store) commit(res *resource, typ watch.EventType, obj, old runtime.Object) {
	s.rv++
	rv := strconv.FormatUint(s.rv, 10)
	if s.objects[res] == nil {
		s.objects[res] = map[string]runtime.Object{}
	}
	if typ == watch.Deleted {
		m := metaOf(old)
		delete(s.objects[res], key(m.GetNamespace(), m.GetName()))
		obj = old.DeepCopyObject()
	} else {
		m := metaOf(obj)
		s.objects[res][key(m.GetNamespace(), m.GetName())] = obj
	}
	metaOf(obj).SetResourceVersion(rv)
	if len(s.log) >= s.keep {
		s.log = append(s.log[:0:0], s.log[len(s.log)-s.keep*9/10:]...)
	}
	s.log = append(s.log, event{rv: s.rv, res: res, typ: typ, obj: obj, old: old})
	close(s.changed)
	s.changed = make(chan struct{})
}

// oldest is the lowest resourceVersion a watch can start from.
func (s *Store) oldest() uint64 {
	if len(s.log) == 0 || s.log[0].rv == 1 {
		return 0
	}
	return s.log[0].rv - 1
}

// create stores a new object of res in namespace as the create verb does.
func (s *Store) create(res *resource, namespace string, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m := metaOf(obj)
	if err := s.checkNamespace(res, namespace, m); err != nil {
		return nil, err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	if err := validateName(res, m); err != nil {
		return nil, err
	}
	if _, err := s.get(res, m.GetNamespace(), m.GetName()); err == nil {
		return nil, apierrors.NewAlreadyExists(res.gr(), m.GetName())
	}
	if res.namespaced {
		if nsObj, err := s.get(byGVR[core("namespaces")], "", m.GetNamespace()); err != nil {
			return nil, err
		} else if metaOf(nsObj).GetDeletionTimestamp() != nil {
			e := apierrors.NewForbidden(res.gr(), m.GetName(), fmt.Errorf("unable to create new content in namespace %s because it is being terminated", m.GetNamespace()))
			e.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", m.GetNamespace()), Field: "metadata.namespace"}}
			return nil, e
		}
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetResourceVersion("")
	if res.generation {
		m.SetGeneration(1)
	}
	if res.status && !res.keepStatus {
		if st := field0(obj, "Status"); st.IsValid() {
			st.SetZero()
		}
	}
	normalize(obj)
	setDefaults(obj)
	if svc, ok := obj.(*corev1.Service); ok {
		var errs field.ErrorList
		for i, p := range svc.Spec.Ports {
			if p.Name == "" && len(svc.Spec.Ports) > 1 {
				errs = append(errs, field.Required(field.NewPath("spec", "ports").Index(i).Child("name"), ""))
			}
		}
		if len(errs) > 0 {
			return nil, apierrors.NewInvalid(res.gk(), svc.Name, errs)
		}
		if err := s.allocateClusterIP(svc); err != nil {
			return nil, err
		}
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		// The ServiceAccount admission plugin.
		if _, err := s.get(byGVR[core("serviceaccounts")], pod.Namespace, pod.Spec.ServiceAccountName); err != nil {
			err = apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, pod.Spec.ServiceAccountName) // as its lister says
			return nil, apierrors.NewForbidden(res.gr(), pod.Name, fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
		}
	}
	if !dryRun {
		s.commit(res, watch.Added, obj, nil)
		if ns, ok := obj.(*corev1.Namespace); ok {
			// The service account controller's work.
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
			if _, err := s.create(byGVR[core("serviceaccounts")], ns.Name, sa, false); err != nil {
				return nil, err
			}
		}
	}
	return obj, nil
}

// checkNamespace sets the object's namespace from the request's, or
// rejects a mismatch as the real apiserver does.
func (s *Store) checkNamespace(res *resource, namespace string, m metav1.Object) error {
	if !res.namespaced {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(namespace)
	} else if namespace != "" && m.GetNamespace() != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

func validateName(res *resource, m metav1.Object) error {
	var errs field.ErrorList
	path := field.NewPath("metadata", "name")
	if m.GetName() == "" {
		errs = append(errs, field.Required(path, "name or generateName is required"))
	}
	for _, msg := range res.nameFn(m.GetName(), false) {
		if m.GetName() != "" {
			errs = append(errs, field.Invalid(path, m.GetName(), msg))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.gk(), m.GetName(), errs)
	}
	return nil
}

// field0 returns the struct field name of obj, or the zero Value.
func field0(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

// update changes the object namespace/name of res to what fn answers from
// a copy of the stored one, as the update verb does (or the status
// subresource's when sub is "status"): fn's resourceVersion, if any, is a
// precondition; the server owns uid, creationTimestamp, generation and the
// deletion fields; an update that changes nothing writes nothing.
func (s *Store) update(res *resource, namespace, name, sub string, dryRun bool, fn func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	cur, err := s.get(res, namespace, name)
	if err != nil {
		if !apierrors.IsNotFound(err) || !res.upsert || sub != "" {
			return nil, err
		}
		obj, err := fn(nil)
		if err != nil {
			return nil, err
		}
		return s.create(res, namespace, obj, dryRun)
	}
	obj, err := fn(cur.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	m, old := metaOf(obj), metaOf(cur)
	if res.namespaced && m.GetNamespace() == "" {
		m.SetNamespace(namespace)
	}
	if m.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
	}
	if err := s.checkNamespace(res, old.GetNamespace(), m); err != nil {
		return nil, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, conflict(res, name)
	} else if rv == "" && res.rvRequired {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: res.gvr.Group, Kind: res.gvr.Resource}, name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
	}
	if uid := m.GetUID(); uid != "" && uid != old.GetUID() {
		return nil, apierrors.NewConflict(res.gr(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.GetUID()))
	}
	m.SetUID(old.GetUID())
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	m.SetDeletionTimestamp(old.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	m.SetGeneration(old.GetGeneration())
	m.SetResourceVersion(old.GetResourceVersion())
	if old.GetDeletionTimestamp() != nil {
		var added []string
		for _, f := range m.GetFinalizers() {
			if !contains(old.GetFinalizers(), f) {
				added = append(added, f)
			}
		}
		if len(added) > 0 {
			return nil, apierrors.NewInvalid(res.gk(), name, field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added))})
		}
	}
	switch {
	case sub == "status":
		// Only the status (and metadata, but ownerReferences) changes.
		for i := 0; i < reflect.ValueOf(obj).Elem().NumField(); i++ {
			f := reflect.ValueOf(obj).Elem().Type().Field(i).Name
			if f != "Status" && f != "ObjectMeta" && f != "TypeMeta" {
				field0(obj, f).Set(field0(cur, f))
			}
		}
		m.SetOwnerReferences(old.GetOwnerReferences())
	case res.status:
		field0(obj, "Status").Set(field0(cur, "Status"))
	}
	normalize(obj)
	if pod, ok := obj.(*corev1.Pod); ok && sub == "" {
		if msg := podUpdateForbidden(cur.(*corev1.Pod), pod); msg != "" {
			return nil, apierrors.NewInvalid(res.gk(), name, field.ErrorList{field.Forbidden(field.NewPath("spec"), msg)})
		}
	}
	if res.generation && !apiequality.Semantic.DeepEqual(field0(obj, "Spec").Interface(), field0(cur, "Spec").Interface()) {
		m.SetGeneration(old.GetGeneration() + 1)
		if ds, ok := obj.(*appsv1.DaemonSet); ok && !apiequality.Semantic.DeepEqual(ds.Spec.Template, cur.(*appsv1.DaemonSet).Spec.Template) {
			if ds.Annotations == nil {
				ds.Annotations = map[string]string{}
			}
			ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(ds.Generation, 10)
		}
	}
	setTypeMeta(obj, nil)
	if apiequality.Semantic.DeepEqual(obj, cur) {
		return cur, nil
	}
	if dryRun {
		return obj, nil
	}
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && (m.GetDeletionGracePeriodSeconds() == nil || *m.GetDeletionGracePeriodSeconds() == 0) {
		s.commit(res, watch.Deleted, nil, obj)
		return obj, nil
	}
	s.commit(res, watch.Modified, obj, cur)
	return obj, nil
}

func conflict(res *resource, name string) error {
	return apierrors.NewConflict(res.gr(), name, errors.New(registryConflictMessage))
}

const registryConflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// remove deletes cur at once, and with a namespace what it holds.
func (s *Store) remove(res *resource, cur runtime.Object) {
	if res.gvr == core("namespaces") {
		ns := metaOf(cur).GetName()
		for _, r := range resources {
			if r.namespaced {
				for _, obj := range s.list(r, ns) {
					s.commit(r, watch.Deleted, nil, obj)
				}
			}
		}
	}
	s.commit(res, watch.Deleted, nil, cur)
}

// deleteResult is what a delete did: the object (as deleted, or as now
// stored when its deletion waits for finalizers or a grace period).
type deleteResult struct {
	obj     runtime.Object
	deleted bool
}

// delete deletes namespace/name as the delete verb does: preconditions,
// graceful deletion of pods, finalizers.
func (s *Store) delete(res *resource, namespace, name string, opts *metav1.DeleteOptions, dryRun bool) (deleteResult, error) {
	cur, err := s.get(res, namespace, name)
	if err != nil {
		return deleteResult{}, err
	}
	old := metaOf(cur)
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != old.GetUID() {
			return deleteResult{}, apierrors.NewConflict(kindResource(res), name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, old.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != old.GetResourceVersion() {
			return deleteResult{}, apierrors.NewConflict(kindResource(res), name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, old.GetResourceVersion()))
		}
	}
	if res.gvr == core("namespaces") {
		switch name {
		case "default", "kube-system", "kube-public":
			return deleteResult{}, apierrors.NewForbidden(res.gr(), name, errors.New("this namespace may not be deleted"))
		}
		if old.GetDeletionTimestamp() != nil || dryRun {
			return deleteResult{obj: cur}, nil
		}
		// Terminating, then the namespace controller's work, here at once:
		// the namespace's objects go, then the namespace.
		ns := cur.(*corev1.Namespace).DeepCopy()
		ts := now()
		ns.DeletionTimestamp = &ts
		ns.Status.Phase = corev1.NamespaceTerminating
		s.commit(res, watch.Modified, ns, cur)
		s.remove(res, ns)
		return deleteResult{obj: ns}, nil
	}
	grace := opts.GracePeriodSeconds
	if grace != nil && *grace < 0 {
		grace = ptr(int64(1))
	}
	obj := cur.DeepCopyObject()
	m := metaOf(obj)
	graceful := false
	if res.graceful {
		if old.GetDeletionTimestamp() != nil {
			// Already terminating: a shorter grace period shortens it.
			if dg := old.GetDeletionGracePeriodSeconds(); dg != nil && *dg != 0 {
				if grace == nil || *grace >= *dg {
					return deleteResult{obj: cur}, nil
				}
				ts := metav1.NewTime(old.GetDeletionTimestamp().Add(time.Duration(*grace-*dg) * time.Second))
				period := *grace
				if n := metav1.Now(); ts.Before(&n) {
					ts = n
					if period != 0 {
						period = 1
					}
				}
				m.SetDeletionTimestamp(&ts)
				m.SetDeletionGracePeriodSeconds(&period)
				graceful = true
			}
		} else {
			pod := cur.(*corev1.Pod)
			period := int64(0)
			if grace != nil {
				period = *grace
			} else if pod.Spec.TerminationGracePeriodSeconds != nil {
				period = *pod.Spec.TerminationGracePeriodSeconds
			}
			if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
				period = 0
			}
			if period < 0 {
				period = 1
			}
			ts := metav1.NewTime(time.Now().Add(time.Duration(period) * time.Second))
			m.SetDeletionTimestamp(&ts)
			m.SetDeletionGracePeriodSeconds(&period)
			if m.GetGeneration() > 0 {
				m.SetGeneration(m.GetGeneration() + 1)
			}
			graceful = true
		}
	}
	pendingGrace := graceful && *m.GetDeletionGracePeriodSeconds() > 0
	if len(old.GetFinalizers()) > 0 || pendingGrace {
		if !graceful {
			if old.GetDeletionTimestamp() != nil {
				return deleteResult{obj: cur}, nil
			}
			ts := now()
			m.SetDeletionTimestamp(&ts)
			m.SetDeletionGracePeriodSeconds(ptr(int64(0)))
		}
		if !dryRun {
			s.commit(res, watch.Modified, obj, cur)
		}
		return deleteResult{obj: obj}, nil
	}
	if !dryRun {
		s.remove(res, cur)
	}
	if graceful {
		return deleteResult{obj: obj, deleted: true}, nil // as the deletion left it (grace 0)
	}
	return deleteResult{obj: s.lastDeleted(res, cur), deleted: true}, nil
}

// lastDeleted is the object as its DELETED event reports it.
func (s *Store) lastDeleted(res *resource, cur runtime.Object) runtime.Object {
	for i := len(s.log) - 1; i >= 0; i-- {
		if e := s.log[i]; e.res == res && e.typ == watch.Deleted && e.old == cur {
			return e.obj
		}
	}
	return cur
}

// kindResource is how preconditions name the object: group and Kind.
func kindResource(res *resource) schema.GroupResource {
	return schema.GroupResource{Group: res.gvr.Group, Resource: res.kind}
}

func ptr[T any](v T) *T { return &v }

// serviceCIDR is where Services get their cluster IP: k3s's default,
// 10.43.0.0/16, whose first address is the kubernetes Service's.
var serviceCIDR = netip.MustParsePrefix("10.43.0.0/16")

// allocateClusterIP gives a ClusterIP Service a free random address of
// serviceCIDR (past the first), or checks the one it asks for.
func (s *Store) allocateClusterIP(svc *corev1.Service) error {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		}
		return nil
	}
	used := map[string]bool{}
	for _, o := range s.list(byGVR[core("services")], "") {
		used[o.(*corev1.Service).Spec.ClusterIP] = true
	}
	if ip := svc.Spec.ClusterIP; ip != "" {
		if used[ip] {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), ip, "provided IP is already allocated")})
		}
		svc.Spec.ClusterIPs = []string{ip}
		return nil
	}
	base := serviceCIDR.Addr().As4()
	size := 1 << (32 - serviceCIDR.Bits())
	for start, i := 2+utilrand.Intn(size-3), 0; i < size-3; i++ {
		n := 2 + (start-2+i)%(size-3)
		ip := netip.AddrFrom4([4]byte{base[0], base[1], base[2] + byte(n>>8), base[3] + byte(n)}).String()
		if !used[ip] {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
			return nil
		}
	}
	return apierrors.NewInternalError(errors.New("range is full"))
}
