package kubelite

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// output is the representation a client asked for.
type output int

const (
	outJSON     output = iota
	outYAML            // application/yaml
	outTable           // a meta.k8s.io/v1 Table
	outMeta            // meta.k8s.io/v1 PartialObjectMetadata(List)
	outProtobuf        // application/vnd.kubernetes.protobuf
)

// tableContentType is what the real server answers for a Table.
const tableContentType = "application/json"

// negotiate picks the first representation of the Accept header that is
// served, as the real server does (protobuf and CBOR are not served).
func negotiate(r *http.Request, verb string) (output, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return outJSON, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*":
			switch {
			case params["as"] == "" && params["g"] == "":
				return outJSON, nil
			case params["g"] == "meta.k8s.io" && params["v"] == "v1" && params["as"] == "Table" && verb != "" && verb != "create" && verb != "update" && verb != "patch" && verb != "delete" && verb != "deletecollection":
				return outTable, nil
			case params["g"] == "meta.k8s.io" && params["v"] == "v1" && (params["as"] == "PartialObjectMetadata" && verb != "list" || params["as"] == "PartialObjectMetadataList" && verb != "get"):
				return outMeta, nil
			}
		case "application/yaml":
			if params["as"] == "" {
				return outYAML, nil
			}
		case runtime.ContentTypeProtobuf:
			if params["as"] == "" && params["g"] == "" {
				return outProtobuf, nil
			}
		}
	}
	return 0, restfulError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
}

// serveResource serves one resource request.
func (h *handler) serveResource(w http.ResponseWriter, r *http.Request, req *request) {
	out, err := negotiate(r, req.verb)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	dryRun := len(q["dryRun"]) > 0
	if req.verb == "watch" || req.verb == "list" {
		var opts metainternalversion.ListOptions
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
			writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		opts.Watch = req.verb == "watch"
		if errs := metainternalversionvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
			writeError(w, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs))
			return
		}
		sel, err := parseSelectors(req, q.Get("labelSelector"), q.Get("fieldSelector"))
		if err != nil {
			writeError(w, err)
			return
		}
		if req.verb == "watch" {
			h.watch(w, r, req, sel, out)
		} else {
			h.list(w, r, req, sel, out)
		}
		return
	}
	s := h.store
	var (
		obj  runtime.Object
		code = http.StatusOK
	)
	switch req.verb {
	case "get":
		s.mu.Lock()
		obj, err = s.get(req.res, req.namespace, req.name)
		s.mu.Unlock()
	case "create":
		if req.sub == "eviction" {
			h.evict(w, r, req, dryRun)
			return
		}
		if obj, err = decodeBody(r, req.res); err == nil {
			s.mu.Lock()
			obj, err = s.create(req.res, req.namespace, obj, dryRun)
			s.mu.Unlock()
			code = http.StatusCreated
		}
	case "update":
		var in runtime.Object
		if in, err = decodeBody(r, req.res); err == nil && metaOf(in).GetName() != req.name {
			err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", metaOf(in).GetName(), req.name))
		} else if err == nil {
			s.mu.Lock()
			_, missing := s.get(req.res, req.namespace, req.name)
			obj, err = s.update(req.res, req.namespace, req.name, req.sub, dryRun, func(runtime.Object) (runtime.Object, error) { return in, nil })
			s.mu.Unlock()
			if missing != nil {
				code = http.StatusCreated
			}
		}
	case "patch":
		var patch []byte
		if patch, err = io.ReadAll(io.LimitReader(r.Body, 3<<20)); err == nil {
			s.mu.Lock()
			obj, err = s.update(req.res, req.namespace, req.name, req.sub, dryRun, func(cur runtime.Object) (runtime.Object, error) {
				if cur == nil { // a patch creates nothing, even where an update may
					return nil, apierrors.NewNotFound(req.res.gr(), req.name)
				}
				return applyPatch(req.res, r.Header.Get("Content-Type"), cur, patch)
			})
			s.mu.Unlock()
		}
	case "delete", "deletecollection":
		var opts *metav1.DeleteOptions
		if opts, err = deleteOptions(r); err != nil {
			break
		}
		if req.verb == "deletecollection" {
			h.deleteCollection(w, r, req, opts, dryRun)
			return
		}
		var res deleteResult
		s.mu.Lock()
		res, err = s.delete(req.res, req.namespace, req.name, opts, dryRun)
		s.mu.Unlock()
		obj = res.obj
		if err == nil && res.deleted && !req.res.returnObj {
			m := metaOf(obj)
			writeJSON(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
				Details: &metav1.StatusDetails{Name: m.GetName(), Group: req.res.gvr.Group, Kind: req.res.gvr.Resource, UID: m.GetUID()}})
			return
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, code, req.res, obj, out, q.Get("includeObject"))
}

// writeObject writes one object in the representation out.
func writeObject(w http.ResponseWriter, code int, res *resource, obj runtime.Object, out output, includeObject string) {
	switch out {
	case outTable:
		t := table(res, []runtime.Object{obj}, false, includeObject)
		t.ResourceVersion = metaOf(obj).GetResourceVersion()
		w.Header().Set("Content-Type", tableContentType)
		b, _ := json.Marshal(t)
		w.WriteHeader(code)
		_, _ = w.Write(append(b, '\n'))
	case outMeta:
		writeJSON(w, code, partialMeta(obj))
	case outYAML:
		writeYAML(w, code, typed(res, obj))
	case outProtobuf:
		writeProtobuf(w, code, typed(res, obj))
	default:
		writeJSON(w, code, typed(res, obj))
	}
}

// typed returns a copy of obj with its apiVersion and kind set.
func typed(res *resource, obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	gvk := res.gvk()
	setTypeMeta(obj, &gvk)
	return obj
}

func partialMeta(obj runtime.Object) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}}
	p.ObjectMeta = *field0(obj, "ObjectMeta").Addr().Interface().(*metav1.ObjectMeta).DeepCopy()
	return p
}

// decodeBody reads a request body holding an object of res, refusing
// another kind or version with the real server's messages.
func decodeBody(r *http.Request, res *resource) (runtime.Object, error) {
	obj := res.new()
	if err := decodeInto(r, obj); err != nil {
		if se, ok := err.(*apierrors.StatusError); ok && strings.HasPrefix(se.ErrStatus.Message, "couldn't get version/kind") {
			se.ErrStatus.Message = fmt.Sprintf("the object provided is unrecognized (must be of type %s): %s", res.kind, se.ErrStatus.Message)
		}
		return nil, err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != res.kind || gvk.Version != "" && gvk.GroupVersion() != res.gvr.GroupVersion() {
		msg := fmt.Sprintf("%s in version %q cannot be handled as a %s: ", gvk.Kind, gvk.Version, res.kind)
		if scheme.Scheme.Recognizes(gvk) {
			msg += fmt.Sprintf("converting (%s.%s) to (%s.%s): unknown conversion", gvk.Version, gvk.Kind, internalGroup(res), res.kind)
		} else {
			msg += fmt.Sprintf("no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", gvk.Kind, gvk.GroupVersion())
		}
		return nil, apierrors.NewBadRequest(msg)
	}
	setTypeMeta(obj, nil)
	return obj, nil
}

// internalGroup is how the real server names a kind's internal package.
func internalGroup(res *resource) string {
	if res.gvr.Group == "" {
		return "core"
	}
	g, _, _ := strings.Cut(res.gvr.Group, ".")
	return g
}

var protobufSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// decodeInto reads a request body (JSON, YAML or protobuf) into obj; an
// empty body leaves obj as it is.
func decodeInto(r *http.Request, obj runtime.Object) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "", "application/json", "*/*":
	case "application/yaml":
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	case runtime.ContentTypeProtobuf:
		if _, _, err := protobufSerializer.Decode(body, nil, obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		return nil
	default:
		return unsupportedMediaType()
	}
	if !json.Valid(body) {
		err := json.Unmarshal(body, new(any))
		return apierrors.NewBadRequest(fmt.Sprintf("couldn't get version/kind; json parse error: %v (%s)", err, body))
	}
	if err := json.Unmarshal(body, obj); err != nil {
		gvk := obj.GetObjectKind().GroupVersionKind()
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, kindOf(obj), err))
	}
	return nil
}

// applyPatch applies a patch of content type ct to cur.
func applyPatch(res *resource, ct string, cur runtime.Object, patch []byte) (runtime.Object, error) {
	curJSON, err := json.Marshal(typed(res, cur))
	if err != nil {
		return nil, err
	}
	ct, _, _ = mime.ParseMediaType(ct)
	switch types.PatchType(ct) {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("invalid JSON patch")
		}
	}
	var out []byte
	switch types.PatchType(ct) {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if out, err = p.Apply(curJSON); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.MergePatchType:
		if out, err = jsonpatch.MergePatch(curJSON, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if out, err = strategicpatch.StrategicMergePatch(curJSON, patch, res.new()); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, unsupportedMediaType()
	}
	obj := res.new()
	if err := json.Unmarshal(out, obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != res.gvk() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), res.gvr.GroupVersion()))
	}
	setTypeMeta(obj, nil)
	return obj, nil
}

// deleteOptions reads a delete's options from its body or query.
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if err := decodeInto(r, opts); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	return opts, nil
}

// selector is a list or watch's selection.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(req *request, ls, fs string) (selector, error) {
	sel := selector{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if ls != "" {
		if sel.labels, err = labels.Parse(ls); err != nil {
			return sel, apierrors.NewBadRequest(err.Error())
		}
	}
	if fs != "" {
		if sel.fields, err = fields.ParseSelector(fs); err != nil {
			return sel, apierrors.NewBadRequest(err.Error())
		}
		known := fieldSet(req.res, req.res.new())
		for _, r := range sel.fields.Requirements() {
			if _, ok := known[r.Field]; ok {
				continue
			}
			if req.res.fields != nil {
				return sel, apierrors.NewBadRequest("field label not supported: " + r.Field)
			}
			return sel, apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %q, %q", r.Field, "metadata.name", "metadata.namespace"))
		}
	}
	if req.name != "" {
		sel.fields = fields.AndSelectors(sel.fields, fields.OneTermEqualSelector("metadata.name", req.name))
	}
	return sel, nil
}

func fieldSet(res *resource, obj runtime.Object) fields.Set {
	m := metaOf(obj)
	set := fields.Set{"metadata.name": m.GetName()}
	if res.namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if res.fields != nil {
		res.fields(obj, set)
	}
	return set
}

func (sel selector) matches(req *request, obj runtime.Object) bool {
	m := metaOf(obj)
	return (req.namespace == "" || m.GetNamespace() == req.namespace) &&
		sel.labels.Matches(labels.Set(m.GetLabels())) && sel.fields.Matches(fieldSet(req.res, obj))
}

// continueToken is the real apiserver's continue token.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion uint64 `json:"rv"`
	StartKey        string `json:"start"`
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, req *request, sel selector, out output) {
	q := r.URL.Query()
	s := h.store
	s.mu.Lock()
	rv := s.rv
	all := s.list(req.res, req.namespace)
	s.mu.Unlock()
	if v := q.Get("resourceVersion"); v != "" && v != "0" {
		n, err := strconv.ParseUint(v, 10, 64)
		switch {
		case err != nil:
			writeError(w, invalidResourceVersion(q.Get("resourceVersion"), err))
			return
		case n > rv:
			st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", n, rv), 1)
			st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
			writeError(w, st)
			return
		case q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact) && n != rv:
			writeError(w, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", n, rv)))
			return
		}
	}
	start := ""
	if c := q.Get("continue"); c != "" {
		var tok continueToken
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(c, "="))
		if err == nil {
			err = json.Unmarshal(b, &tok)
		}
		if err != nil || tok.APIVersion != "meta.k8s.io/v1" {
			if err == nil {
				err = fmt.Errorf("got version %s, expected meta.k8s.io/v1", tok.APIVersion)
			}
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: continue key is not valid: %v", err)))
			return
		}
		start, rv = tok.StartKey, tok.ResourceVersion
	}
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	if q.Get("resourceVersion") == "0" && q.Get("continue") == "" {
		limit = 0 // as the watch cache, which ignores limit for resourceVersion=0
	}
	var items []runtime.Object
	var lm metav1.ListMeta
	lm.ResourceVersion = strconv.FormatUint(rv, 10)
	for i, obj := range all {
		m := metaOf(obj)
		k := m.GetName()
		if req.res.namespaced {
			k = m.GetNamespace() + "/" + k
		}
		if req.namespace == "" || !req.res.namespaced {
			k = "/" + k
		} else {
			k = "/" + m.GetName()
		}
		if start != "" && k < start || !sel.matches(req, obj) {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			// As etcd3's: the key relative to the listed prefix of the last
			// item returned, then a zero byte.
			last := metaOf(items[len(items)-1])
			lk := "/" + last.GetName()
			if req.res.namespaced && req.namespace == "" {
				lk = "/" + last.GetNamespace() + "/" + last.GetName()
			}
			b, _ := json.Marshal(continueToken{"meta.k8s.io/v1", rv, lk + "\x00"})
			lm.Continue = base64.RawURLEncoding.EncodeToString(b)
			rest := int64(0)
			for _, o := range all[i:] {
				if sel.matches(req, o) {
					rest++
				}
			}
			lm.RemainingItemCount = &rest
			break
		}
		items = append(items, obj)
	}
	writeList(w, req.res, items, lm, out, q.Get("includeObject"))
}

// writeList writes a list (or table) of items.
func writeList(w http.ResponseWriter, res *resource, items []runtime.Object, lm metav1.ListMeta, out output, includeObject string) {
	switch out {
	case outTable:
		t := table(res, items, false, includeObject)
		t.ListMeta = lm
		w.Header().Set("Content-Type", tableContentType)
		b, _ := json.Marshal(t)
		_, _ = w.Write(append(b, '\n'))
	case outMeta:
		l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}, ListMeta: lm, Items: []metav1.PartialObjectMetadata{}}
		for _, obj := range items {
			l.Items = append(l.Items, *partialMeta(obj))
		}
		writeJSON(w, http.StatusOK, l)
	case outProtobuf:
		l, err := typedList(res, items, lm)
		if err != nil {
			writeError(w, err)
			return
		}
		writeProtobuf(w, http.StatusOK, l)
	default:
		if items == nil {
			items = []runtime.Object{}
		}
		l := &list{TypeMeta: metav1.TypeMeta{Kind: res.kind + "List", APIVersion: res.gvr.GroupVersion().String()}, ListMeta: lm, Items: items}
		if out == outYAML {
			writeYAML(w, http.StatusOK, l)
		} else {
			writeJSON(w, http.StatusOK, l)
		}
	}
}

// list is the wire form of every XList.
type list struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []runtime.Object `json:"items"`
}

func (h *handler) deleteCollection(w http.ResponseWriter, r *http.Request, req *request, opts *metav1.DeleteOptions, dryRun bool) {
	q := r.URL.Query()
	sel, err := parseSelectors(req, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		writeError(w, err)
		return
	}
	s := h.store
	s.mu.Lock()
	var items []runtime.Object
	for _, obj := range s.list(req.res, req.namespace) {
		if !sel.matches(req, obj) {
			continue
		}
		m := metaOf(obj)
		o := *opts
		if res, err := s.delete(req.res, m.GetNamespace(), m.GetName(), &o, dryRun); err == nil {
			items = append(items, res.obj)
		}
	}
	rv := s.rv
	s.mu.Unlock()
	writeList(w, req.res, items, metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)}, outJSON, "")
}

// watchEvent is the wire form of a watch event.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watch streams the changes of the selected objects, as the watch cache
// does: from resourceVersion (after sending the current state when it is
// unset or 0, or when sendInitialEvents asks), with bookmarks when allowed,
// until timeoutSeconds or the client goes.
func (h *handler) watch(w http.ResponseWriter, r *http.Request, req *request, sel selector, out output) {
	q := r.URL.Query()
	s := h.store
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	timeout := time.Duration(1800*(1+rand.Float64())) * time.Second
	if t := q.Get("timeoutSeconds"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		timeout = time.Duration(n) * time.Second
	}
	rvParam, sendInitial := q.Get("resourceVersion"), q.Get("sendInitialEvents")
	s.mu.Lock()
	pos := s.rv
	var initial []runtime.Object
	var startErr error
	if sendInitial == "true" || sendInitial == "" && (rvParam == "" || rvParam == "0") {
		for _, obj := range s.list(req.res, req.namespace) {
			if sel.matches(req, obj) {
				initial = append(initial, obj)
			}
		}
	} else if rvParam != "" {
		n, err := strconv.ParseUint(rvParam, 10, 64)
		switch {
		case err != nil:
			startErr = invalidResourceVersion(rvParam, err)
		case n < s.oldest():
			startErr = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", n, s.oldest()+1))
		default:
			pos = n
		}
	}
	s.mu.Unlock()
	if e, ok := startErr.(*apierrors.StatusError); ok && e.ErrStatus.Code == http.StatusInternalServerError {
		writeError(w, startErr)
		return
	}

	ct := "application/json"
	var pb *protobufWatchEncoder
	switch out {
	case outTable:
		ct = tableContentType
	case outProtobuf:
		ct = runtime.ContentTypeProtobuf + ";stream=watch"
		pb = newProtobufWatchEncoder(w)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	headers := true
	send := func(typ watch.EventType, obj runtime.Object) error {
		var o any
		switch {
		case typ == watch.Error || typ == watch.Bookmark:
			o = obj
		case out == outTable:
			t := table(req.res, []runtime.Object{obj}, !headers, q.Get("includeObject"))
			t.ResourceVersion = metaOf(obj).GetResourceVersion()
			headers = false
			o = t
		case out == outMeta:
			o = partialMeta(obj)
		case pb != nil:
			return pb.encode(typ, typed(req.res, obj))
		default:
			o = typed(req.res, obj)
		}
		if pb != nil {
			return pb.encode(typ, o.(runtime.Object))
		}
		return enc.Encode(watchEvent{typ, o})
	}
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	bookmark := func(initialEnd bool) error {
		if out == outTable {
			return nil
		}
		obj := req.res.new()
		gvk := req.res.gvk()
		setTypeMeta(obj, &gvk)
		m := metaOf(obj)
		m.SetResourceVersion(strconv.FormatUint(pos, 10))
		if initialEnd {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		return send(watch.Bookmark, obj)
	}
	if startErr != nil {
		st := startErr.(apierrors.APIStatus).Status()
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		_ = send(watch.Error, &st)
		return
	}
	for _, obj := range initial {
		if send(watch.Added, obj) != nil {
			return
		}
	}
	if bookmarks && (sendInitial == "true" || sendInitial == "" && (rvParam == "" || rvParam == "0")) {
		// As the watch cache: the end of the initial events is told.
		if bookmark(true) != nil {
			return
		}
	}
	flush()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	s.mu.Lock()
	interval := s.tick
	s.mu.Unlock()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		if pos < s.oldest() {
			s.mu.Unlock()
			st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", pos, s.oldest()+1)).Status()
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			_ = send(watch.Error, &st)
			return
		}
		i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rv > pos })
		events := append([]event(nil), s.log[i:]...)
		s.mu.Unlock()
		for _, e := range events {
			pos = e.rv
			if e.res != req.res {
				continue
			}
			typ := e.typ
			if typ == watch.Modified {
				was, is := sel.matches(req, e.old), sel.matches(req, e.obj)
				switch {
				case !was && !is:
					continue
				case !was:
					typ = watch.Added
				case !is:
					typ = watch.Deleted
				}
			} else if !sel.matches(req, e.obj) {
				continue
			}
			if send(typ, e.obj) != nil {
				return
			}
		}
		flush()
		select {
		case <-changed:
		case <-tick.C:
			if bookmarks {
				if bookmark(false) != nil {
					return
				}
				flush()
			}
		case <-deadline.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// kindOf is the Go type name of obj, which is its Kind for the served types.
func kindOf(obj runtime.Object) string {
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// invalidResourceVersion is the real server's answer to a resourceVersion
// that is not a number: a 500 without a reason, from its storage layer.
func invalidResourceVersion(rv string, err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Message: field.Invalid(field.NewPath("resourceVersion"), rv, err.Error()).Error()}}
}
