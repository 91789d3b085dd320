package v1alpha1

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

const crdPath = "../../../charts/recommend-job/crds/resourcerecommends.yaml"

// quantityPattern is the pattern Kubernetes uses for resource.Quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

func loadCRD(t *testing.T) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatalf("reading CRD: %v", err)
	}
	var crd map[string]interface{}
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("parsing CRD: %v", err)
	}
	return crd
}

// get walks a parsed YAML document along path, failing the test if a step is
// missing.
func get(t *testing.T, doc interface{}, path ...interface{}) interface{} {
	t.Helper()
	cur := doc
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]interface{})
			if !ok {
				t.Fatalf("%v: not a map", path[:i])
			}
			if cur, ok = m[k]; !ok {
				t.Fatalf("%v: missing", path[:i+1])
			}
		case int:
			s, ok := cur.([]interface{})
			if !ok || k >= len(s) {
				t.Fatalf("%v: not a list of more than %d items", path[:i], k)
			}
			cur = s[k]
		}
	}
	return cur
}

func TestCRDIdentity(t *testing.T) {
	crd := loadCRD(t)

	checks := []struct {
		path []interface{}
		want interface{}
	}{
		{[]interface{}{"apiVersion"}, "apiextensions.k8s.io/v1"},
		{[]interface{}{"kind"}, "CustomResourceDefinition"},
		{[]interface{}{"metadata", "name"}, Resource + "." + GroupName},
		{[]interface{}{"spec", "group"}, GroupName},
		{[]interface{}{"spec", "scope"}, "Namespaced"},
		{[]interface{}{"spec", "names", "kind"}, Kind},
		{[]interface{}{"spec", "names", "listKind"}, "ResourceRecommendList"},
		{[]interface{}{"spec", "names", "plural"}, Resource},
		{[]interface{}{"spec", "names", "singular"}, "resourcerecommend"},
		{[]interface{}{"spec", "names", "shortNames"}, []interface{}{"rec"}},
		{[]interface{}{"spec", "versions", 0, "name"}, SchemeGroupVersion.Version},
		{[]interface{}{"spec", "versions", 0, "served"}, true},
		{[]interface{}{"spec", "versions", 0, "storage"}, true},
		{[]interface{}{"spec", "versions", 0, "subresources"}, map[string]interface{}{"status": map[string]interface{}{}}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, get(t, crd, c.path...)); diff != "" {
			t.Errorf("%v mismatch (-want +got):\n%s", c.path, diff)
		}
	}
	if n := len(get(t, crd, "spec", "versions").([]interface{})); n != 1 {
		t.Errorf("CRD has %d versions, want 1", n)
	}
	if _, ok := get(t, crd, "spec", "versions", 0).(map[string]interface{})["additionalPrinterColumns"]; ok {
		t.Error("CRD has additionalPrinterColumns, katalyst's has none")
	}
}

func TestCRDSchemaSpecifics(t *testing.T) {
	crd := loadCRD(t)
	root := get(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema")
	policy := []interface{}{"properties", "spec", "properties", "resourcePolicy", "properties"}
	algo := append(slices.Clone(policy), "algorithmPolicy", "properties")
	target := []interface{}{"properties", "spec", "properties", "targetRef"}

	checks := []struct {
		path []interface{}
		want interface{}
	}{
		{append(slices.Clone(algo), "recommender", "default"), "default"},
		{append(slices.Clone(algo), "algorithm", "default"), string(AlgorithmPercentile)},
		{append(slices.Clone(algo), "extensions", "x-kubernetes-preserve-unknown-fields"), true},
		{append(slices.Clone(target), "x-kubernetes-map-type"), "atomic"},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, get(t, root, c.path...)); diff != "" {
			t.Errorf("%v mismatch (-want +got):\n%s", c.path, diff)
		}
	}
}

// TestCRDMatchesTypes walks the Go types and the CRD schema together, so that
// a field added to one and not the other, or with a different JSON name,
// type or optionality, fails the test.
func TestCRDMatchesTypes(t *testing.T) {
	crd := loadCRD(t)
	root, ok := get(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema").(map[string]interface{})
	if !ok {
		t.Fatal("openAPIV3Schema is not a map")
	}
	// The root description is the only place the kind is described.
	if root["description"] == nil {
		t.Error("openAPIV3Schema has no description")
	}
	compareSchema(t, "", reflect.TypeOf(ResourceRecommend{}), root)
}

var (
	quantityType     = reflect.TypeOf(resource.Quantity{})
	resourceListType = reflect.TypeOf(corev1.ResourceList{})
	timeType         = reflect.TypeOf(metav1.Time{})
	rawExtensionType = reflect.TypeOf(runtime.RawExtension{})
	objectMetaType   = reflect.TypeOf(metav1.ObjectMeta{})
)

func compareSchema(t *testing.T, path string, typ reflect.Type, schema map[string]interface{}) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}

	switch typ {
	case objectMetaType:
		// The API server owns metadata's schema; CRDs only declare an object.
		if diff := cmp.Diff(map[string]interface{}{"type": "object"}, schema); diff != "" {
			t.Errorf("%s: metadata schema mismatch (-want +got):\n%s", path, diff)
		}
		return
	case quantityType:
		checkQuantity(t, path, schema)
		return
	case resourceListType:
		if schema["type"] != "object" {
			t.Errorf("%s: type = %v, want object", path, schema["type"])
		}
		values, ok := schema["additionalProperties"].(map[string]interface{})
		if !ok {
			t.Errorf("%s: ResourceList has no additionalProperties", path)
			return
		}
		checkQuantity(t, path+"[*]", values)
		return
	case timeType:
		checkScalar(t, path, schema, "string", "date-time")
		return
	case rawExtensionType:
		if schema["type"] != "object" || schema["x-kubernetes-preserve-unknown-fields"] != true {
			t.Errorf("%s: RawExtension must be an object preserving unknown fields, got %v", path, schema)
		}
		return
	}

	switch typ.Kind() {
	case reflect.String:
		checkScalar(t, path, schema, "string", "")
	case reflect.Bool:
		checkScalar(t, path, schema, "boolean", "")
	case reflect.Int32:
		checkScalar(t, path, schema, "integer", "int32")
	case reflect.Int64:
		checkScalar(t, path, schema, "integer", "int64")
	case reflect.Slice:
		if schema["type"] != "array" {
			t.Errorf("%s: type = %v, want array", path, schema["type"])
			return
		}
		items, ok := schema["items"].(map[string]interface{})
		if !ok {
			t.Errorf("%s: array has no items schema", path)
			return
		}
		compareSchema(t, path+"[*]", typ.Elem(), items)
	case reflect.Struct:
		compareStruct(t, path, typ, schema)
	default:
		t.Errorf("%s: Go kind %s has no schema mapping in this test", path, typ.Kind())
	}
}

func compareStruct(t *testing.T, path string, typ reflect.Type, schema map[string]interface{}) {
	t.Helper()
	if schema["type"] != "object" {
		t.Errorf("%s: type = %v, want object", path, schema["type"])
	}
	props, _ := schema["properties"].(map[string]interface{})

	fields := map[string]reflect.StructField{}
	var required []string
	collectFields(typ, fields, &required)

	for name, f := range fields {
		sub, ok := props[name].(map[string]interface{})
		if !ok {
			t.Errorf("%s.%s: field %s.%s is not in the schema", path, name, typ.Name(), f.Name)
			continue
		}
		if f.Type != objectMetaType && sub["description"] == nil {
			t.Errorf("%s.%s: no description", path, name)
		}
		compareSchema(t, path+"."+name, f.Type, sub)
	}
	for name := range props {
		if _, ok := fields[name]; !ok {
			t.Errorf("%s.%s: schema property has no field in %s", path, name, typ.Name())
		}
	}

	// Like controller-gen, a field is required exactly when it is not
	// omitempty.
	var gotRequired []string
	if r, ok := schema["required"].([]interface{}); ok {
		for _, v := range r {
			gotRequired = append(gotRequired, v.(string))
		}
	}
	sort.Strings(required)
	sort.Strings(gotRequired)
	if diff := cmp.Diff(required, gotRequired); diff != "" {
		t.Errorf("%s: required mismatch (-Go +schema):\n%s", path, diff)
	}
}

// collectFields records the JSON fields of typ, flattening inlined structs.
func collectFields(typ reflect.Type, fields map[string]reflect.StructField, required *[]string) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && slices.Contains(strings.Split(opts, ","), "inline") {
			// Inlined fields (TypeMeta's apiVersion and kind) are all
			// omitempty, so they never add to required.
			var ignored []string
			collectFields(f.Type, fields, &ignored)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			*required = append(*required, name)
		}
	}
}

func checkScalar(t *testing.T, path string, schema map[string]interface{}, typ, format string) {
	t.Helper()
	if schema["type"] != typ {
		t.Errorf("%s: type = %v, want %s", path, schema["type"], typ)
	}
	got, _ := schema["format"].(string)
	if got != format {
		t.Errorf("%s: format = %q, want %q", path, got, format)
	}
}

func checkQuantity(t *testing.T, path string, schema map[string]interface{}) {
	t.Helper()
	wantAnyOf := []interface{}{
		map[string]interface{}{"type": "integer"},
		map[string]interface{}{"type": "string"},
	}
	if diff := cmp.Diff(wantAnyOf, schema["anyOf"]); diff != "" {
		t.Errorf("%s: anyOf mismatch (-want +got):\n%s", path, diff)
	}
	if schema["pattern"] != quantityPattern {
		t.Errorf("%s: pattern = %v, want the Kubernetes quantity pattern", path, schema["pattern"])
	}
	if schema["x-kubernetes-int-or-string"] != true {
		t.Errorf("%s: x-kubernetes-int-or-string is not true", path)
	}
	if _, ok := schema["type"]; ok {
		t.Errorf("%s: int-or-string must not declare a type", path)
	}
}
