package kubelite

import (
	"bytes"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufInfo is the protobuf serializer client-go's typed clients
// prefer (application/vnd.kubernetes.protobuf), with its stream framing.
var protobufInfo, _ = runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)

// writeProtobuf writes obj (with its apiVersion and kind set) as protobuf.
func writeProtobuf(w http.ResponseWriter, code int, obj runtime.Object) {
	var b bytes.Buffer
	if err := protobufInfo.Serializer.Encode(obj, &b); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// typedList is the XList object of res holding items, for protobuf.
func typedList(res *resource, items []runtime.Object, lm metav1.ListMeta) (runtime.Object, error) {
	gvk := res.gvr.GroupVersion().WithKind(res.kind + "List")
	l, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(l, items); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(l)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	la.SetRemainingItemCount(lm.RemainingItemCount)
	l.GetObjectKind().SetGroupVersionKind(gvk)
	return l, nil
}

// protobufWatchEncoder writes watch events as the real server's protobuf
// watch stream: length-delimited metav1.WatchEvent frames, each object
// embedded in its protobuf envelope.
type protobufWatchEncoder struct{ enc streaming.Encoder }

func newProtobufWatchEncoder(w io.Writer) *protobufWatchEncoder {
	s := protobufInfo.StreamSerializer
	return &protobufWatchEncoder{streaming.NewEncoder(s.Framer.NewFrameWriter(w), s.Serializer)}
}

func (e *protobufWatchEncoder) encode(typ watch.EventType, obj runtime.Object) error {
	var b bytes.Buffer
	if err := protobufInfo.Serializer.Encode(obj, &b); err != nil {
		return err
	}
	return e.enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: b.Bytes()}})
}
