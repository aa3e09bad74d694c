// The frontend's entry points (frontend.h): parsing a file, describing its
// defs and their parameters (annotations, Kiln tensor types, defaults), and
// specializing one def for concrete arguments: tensor parameters become graph
// inputs, everything else a compile-time constant.
#include "frontend/frontend.h"

#include <exception>
#include <new>
#include <string>

#include "frontend/ast.h"
#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

struct ParamType {
  ParamKind kind = ParamKind::Tensor;
  bool optional = false;
  std::optional<ir::TensorType> declared;
  const Expr* dict = nullptr;  // a Dict[...] annotation: only None can be passed
};

// Reads `Tensor`, `Tensor[f32, N, 784]`, `int`, `List[int]`, `Optional[Tensor]`, ...
ParamType param_type(const Param& p, Diagnostics& diags) {
  ParamType t;
  const Expr* a = p.annotation.get();
  if (!a) return t;  // TorchScript: unannotated parameters are tensors
  if (a->kind == ExprKind::Subscript && a->items[0]->kind == ExprKind::Name &&
      a->items[0]->name == "Optional") {
    t.optional = true;
    a = a->items[1].get();
  }
  auto name_of = [](const Expr* e) -> std::string {
    if (e->kind == ExprKind::Name) return e->name;
    if (e->kind == ExprKind::Attribute) return e->name;  // torch.Tensor
    if (e->kind == ExprKind::None) return "None";
    return "";
  };
  std::string head = a->kind == ExprKind::Subscript ? name_of(a->items[0].get()) : name_of(a);
  if (head == "Tensor" && a->kind == ExprKind::Subscript) {
    std::vector<const Expr*> parts;
    const Expr& idx = *a->items[1];
    if (idx.kind == ExprKind::Tuple) {
      for (const ExprPtr& e : idx.items) parts.push_back(e.get());
    } else {
      parts.push_back(&idx);
    }
    ir::TensorType tt;
    std::optional<DType> dt =
        parts[0]->kind == ExprKind::Name ? parse_dtype(parts[0]->name) : std::nullopt;
    if (!dt) {
      diags.error(parts[0]->span,
                  "expected a dtype (f32, f16, i64, bool, ...) as the first item of a "
                  "Tensor annotation, got '" +
                      dump_expr(*parts[0]) + "'");
      return t;
    }
    tt.dtype = *dt;
    for (size_t k = 1; k < parts.size(); ++k) {
      const Expr* d = parts[k];
      if (d->kind == ExprKind::Int && d->ival >= 0) {
        tt.dims.push_back(ir::Dim(d->ival));
      } else if (d->kind == ExprKind::Name) {
        tt.dims.push_back(ir::Dim::sym(d->name));
      } else {
        diags.error(d->span, "a Tensor dim must be a non-negative int or a symbol name, got '" +
                                 dump_expr(*d) + "'");
        return t;
      }
    }
    t.declared = tt;
    return t;
  }
  if (head == "Tensor") return t;
  if (head == "int")
    t.kind = ParamKind::Int;
  else if (head == "float")
    t.kind = ParamKind::Float;
  else if (head == "bool")
    t.kind = ParamKind::Bool;
  else if (head == "str")
    t.kind = ParamKind::Str;
  else if (head == "Dict") {
    t.kind = ParamKind::Other;
    t.dict = a;
  }
  else if ((head == "List" || head == "Tuple") && a->kind == ExprKind::Subscript) {
    const Expr& idx = *a->items[1];
    std::vector<std::string> elems;
    if (idx.kind == ExprKind::Tuple) {
      for (const ExprPtr& e : idx.items) elems.push_back(name_of(e.get()));
    } else {
      elems.push_back(name_of(&idx));
    }
    if (head == "List" && elems.size() == 1 && elems[0] == "Tensor") {
      t.kind = ParamKind::TensorList;
      return t;
    }
    bool all_int = true, all_float = true;
    for (const std::string& e : elems) {
      all_int = all_int && (e == "int" || e == "...");
      all_float = all_float && (e == "float" || e == "...");
    }
    t.kind = all_int ? ParamKind::IntList : all_float ? ParamKind::FloatList : ParamKind::Other;
  } else {
    t.kind = ParamKind::Other;
  }
  return t;
}

// Literal defaults for FunctionInfo (the lowering evaluates defaults itself).
std::optional<ir::AttrValue> literal_value(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Int:
      return ir::AttrValue(e.ival);
    case ExprKind::Float:
      return ir::AttrValue(e.fval);
    case ExprKind::Bool:
      return ir::AttrValue(e.ival != 0);
    case ExprKind::Str:
      return ir::AttrValue(e.name);
    case ExprKind::None:
      return ir::AttrValue(ir::NoneAttr{});
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<int64_t> ints;
      std::vector<double> floats;
      bool all_int = true;
      for (const ExprPtr& item : e.items) {
        if (item->kind == ExprKind::Int) {
          ints.push_back(item->ival);
          floats.push_back(double(item->ival));
        } else if (item->kind == ExprKind::Float) {
          all_int = false;
          floats.push_back(item->fval);
        } else {
          return std::nullopt;
        }
      }
      return all_int ? ir::AttrValue(ints) : ir::AttrValue(floats);
    }
    default:
      return std::nullopt;
  }
}

Val val_of(const ir::AttrValue& a) {
  if (std::holds_alternative<bool>(a)) return Val::bool_(std::get<bool>(a));
  if (std::holds_alternative<int64_t>(a)) return Val::int_(std::get<int64_t>(a));
  if (std::holds_alternative<double>(a)) return Val::float_(std::get<double>(a));
  if (std::holds_alternative<std::string>(a)) return Val::str(std::get<std::string>(a));
  if (std::holds_alternative<DType>(a)) return Val::dtype_(std::get<DType>(a));
  if (auto* v = std::get_if<std::vector<int64_t>>(&a)) {
    std::vector<Val> items;
    for (int64_t i : *v) items.push_back(Val::int_(i));
    return Val::tuple(items, Val::Kind::List);
  }
  if (auto* v = std::get_if<std::vector<double>>(&a)) {
    std::vector<Val> items;
    for (double d : *v) items.push_back(Val::float_(d));
    return Val::tuple(items, Val::Kind::List);
  }
  return Val::none();
}

// Declared dims are kept where symbolic; a bound static type must agree with them.
bool compatible(const ir::TensorType& declared, const ir::TensorType& bound) {
  if (declared.dtype != bound.dtype || declared.rank() != bound.rank()) return false;
  for (size_t k = 0; k < declared.dims.size(); ++k) {
    const ir::Dim& d = declared.dims[k];
    const ir::Dim& b = bound.dims[k];
    if (d.is_static() && b.is_static() && d.value != b.value) return false;
    if (d.is_static() && !b.is_static()) return false;
  }
  return true;
}

void flatten_outputs(Lowerer& L, const Val& v, const Span& at, std::vector<ir::Value*>& out) {
  switch (v.kind) {
    case Val::Kind::Tensor:
      out.push_back(v.value);
      return;
    case Val::Kind::Tuple:
    case Val::Kind::List:
      for (const Val& item : v.items) flatten_outputs(L, item, at, out);
      return;
    case Val::Kind::Int:
    case Val::Kind::Float:
    case Val::Kind::Bool: {
      DType dt = v.kind == Val::Kind::Int     ? DType::I64
                 : v.kind == Val::Kind::Float ? DType::F64
                                              : DType::Bool;
      out.push_back(L.apply1(
          "full", {}, {{"size", std::vector<int64_t>{}}, {"value", v.num()}, {"dtype", dt}}, at));
      return;
    }
    case Val::Kind::Poison:
      throw Abort{};
    default:
      L.fail(at,
             "a function can only return tensors, numbers and tuples of them, got " + kind_name(v));
  }
}

// Runs one public entry point so that only kiln::Error leaves the frontend. An
// Abort getting out means a diagnostic was recorded but not reported (it is
// reported now); any other exception is a frontend bug. std::bad_alloc passes
// unchanged: running out of memory is not a bug of ours.
template <class Fn>
auto guarded(const char* entry, Diagnostics& diags, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const Abort&) {
    diags.throw_if_any();
    throw InternalError(std::string("frontend: ") + entry +
                        ": lowering stopped without reporting an error");
  } catch (const std::exception& e) {
    throw InternalError(std::string("frontend: ") + entry + ": unexpected exception: " + e.what());
  } catch (...) {
    throw InternalError(std::string("frontend: ") + entry + ": unknown exception");
  }
}

std::vector<FunctionInfo> functions_impl(const Module& m) {
  std::vector<FunctionInfo> out;
  Diagnostics ignored(m.file);
  for (const FunctionDef& f : m.functions) {
    FunctionInfo info;
    info.name = f.name;
    info.loc = m.file->loc(f.span);
    for (const Param& p : f.params) {
      ParamInfo pi;
      pi.name = p.name;
      ParamType t = param_type(p, ignored);
      pi.kind = t.kind;
      pi.declared = t.declared;
      pi.annotation = p.annotation ? dump_expr(*p.annotation) : "Tensor";
      if (p.annotation && p.annotation->kind == ExprKind::Subscript) {
        // "Tensor[f32, N, 784]" rather than the generic subscript form.
        pi.annotation = dump_expr(*p.annotation);
      }
      if (p.default_value) {
        if (auto v = literal_value(*p.default_value)) {
          pi.has_default = true;
          pi.default_value = *v;
        }
      }
      info.params.push_back(std::move(pi));
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::unique_ptr<ir::Graph> lower_function_impl(const Module& m, const std::string& fn,
                                               const std::vector<ArgBinding>& args,
                                               Diagnostics& diags) {
  const FunctionDef* f =
      fn.empty() ? (m.functions.empty() ? nullptr : &m.functions.back()) : m.find(fn);
  if (!f) {
    std::string names;
    for (const FunctionDef& d : m.functions) names += (names.empty() ? "" : ", ") + d.name;
    throw Error(m.file->filename() + ": error: no function named '" + fn + "' (defined: " + names +
                ")");
  }
  for (const Diagnostic& d : f->deferred) diags.add(d);
  auto g = std::make_unique<ir::Graph>(f->name);
  Lowerer L(m, *g, diags);
  Frame top;

  for (const ArgBinding& a : args) {
    bool known = false;
    for (const Param& p : f->params) known = known || p.name == a.name;
    if (!known)
      diags.error(f->span, "unknown argument '" + a.name + "' for function '" + f->name + "'");
  }
  for (const Param& p : f->params) {
    const ArgBinding* binding = nullptr;
    for (const ArgBinding& a : args) {
      if (a.name == p.name) binding = &a;
    }
    ParamType t = param_type(p, diags);
    bool given_none =
        binding && !binding->tensor && std::holds_alternative<ir::NoneAttr>(binding->value);
    if (t.dict) {
      bool none_default = p.default_value && p.default_value->kind == ExprKind::None;
      if (given_none || (!binding && none_default)) {
        top.vars[p.name] = Val::none();
      } else {
        diags.error(t.dict->span, "Dict parameters are not supported: Kiln has no dict values",
                    "pass the entries as separate arguments, or as a tuple or list");
      }
      continue;
    }
    if (binding && binding->tensors) {
      if (t.kind != ParamKind::TensorList) {
        diags.error(p.span, "argument '" + p.name + "' is declared '" +
                                (p.annotation ? dump_expr(*p.annotation) : "Tensor") +
                                "' but was given a list of tensors");
        continue;
      }
      std::vector<Val> items;
      for (size_t k = 0; k < binding->tensors->size(); ++k) {
        std::string name = p.name + "." + std::to_string(k);
        items.push_back(L.fresh(g->add_input(name, ir::Type::tensor((*binding->tensors)[k]))));
      }
      top.vars[p.name] = Val::tuple(std::move(items), Val::Kind::List);
      continue;
    }
    if (t.kind == ParamKind::TensorList && binding && binding->tensor) {
      diags.error(p.span, "argument '" + p.name +
                              "' is a List[Tensor] parameter but was given one tensor; "
                              "pass a list of tensors");
      continue;
    }
    if (t.kind == ParamKind::Tensor) {
      std::optional<ir::TensorType> type;
      if (binding && binding->tensor) {
        type = *binding->tensor;
        if (t.declared) {
          if (!compatible(*t.declared, *type)) {
            diags.error(p.span, "argument '" + p.name + "' has type " + type->str() +
                                    " but the parameter is declared " + t.declared->str());
            continue;
          }
          if (!ir::dims_are_static(t.declared->dims)) {
            ir::TensorType keep = *t.declared;
            keep.device = type->device;
            type = keep;
          }
        }
      } else if (binding && !given_none) {
        diags.error(p.span,
                    "argument '" + p.name + "' is a Tensor parameter but was given a constant");
        continue;
      } else if (t.declared && !given_none) {
        type = t.declared;
      }
      if (!type) {
        if (t.optional || (p.default_value && p.default_value->kind == ExprKind::None)) {
          top.vars[p.name] = Val::none();
        } else if (given_none) {
          diags.error(p.span, "argument '" + p.name + "' is a Tensor parameter but was given None" +
                                  "; declare it Optional[Tensor] to accept None");
        } else {
          diags.error(p.span, "missing argument '" + p.name + "' (a Tensor) for function '" +
                                  f->name + "'");
        }
        continue;
      }
      top.vars[p.name] = L.fresh(g->add_input(p.name, ir::Type::tensor(*type)));
      continue;
    }
    if (binding && binding->tensor) {
      diags.error(p.span, "argument '" + p.name + "' is declared '" + dump_expr(*p.annotation) +
                              "' but was given a tensor");
      continue;
    }
    Val v;
    if (binding) {
      v = val_of(binding->value);
    } else if (p.default_value) {
      try {
        v = L.eval(*p.default_value);
      } catch (const Abort&) {
        continue;
      }
    } else {
      diags.error(p.span, "missing argument '" + p.name + "' for function '" + f->name + "'");
      continue;
    }
    // int -> float as Python's type annotations allow; nothing else converts.
    if (t.kind == ParamKind::Float && (v.kind == Val::Kind::Int)) v = Val::float_(double(v.i));
    bool ok =
        t.kind == ParamKind::Other || v.kind == Val::Kind::None ||
        (t.kind == ParamKind::Int && (v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool)) ||
        (t.kind == ParamKind::Float && v.kind == Val::Kind::Float) ||
        (t.kind == ParamKind::Bool && v.kind == Val::Kind::Bool) ||
        (t.kind == ParamKind::Str && v.kind == Val::Kind::Str) ||
        ((t.kind == ParamKind::IntList || t.kind == ParamKind::FloatList) && v.is_seq()) ||
        (t.kind == ParamKind::TensorList && v.is_seq() && v.items.empty());
    if (v.kind == Val::Kind::None && !t.optional && binding) ok = false;
    if (!ok) {
      diags.error(p.span, "argument '" + p.name + "' is declared '" +
                              (p.annotation ? dump_expr(*p.annotation) : "Tensor") +
                              "' but was given " + kind_name(v));
      continue;
    }
    top.vars[p.name] = v;
  }
  diags.throw_if_any();

  Val ret = L.run(*f, std::move(top));
  diags.throw_if_any();
  std::vector<ir::Value*> outs;
  try {
    if (ret.kind == Val::Kind::None) {
      L.fail(f->span,
             "function '" + f->name + "' returns nothing; a graph needs at least one output");
    }
    flatten_outputs(L, ret, f->span, outs);
  } catch (const Abort&) {
  }
  diags.throw_if_any();
  g->set_outputs(outs);
  return g;
}

}  // namespace

std::shared_ptr<const Module> parse_module(const std::string& source, const std::string& filename) {
  auto file = std::make_shared<const SourceFile>(source, filename);
  Diagnostics diags(file);
  return guarded("parse_module", diags, [&]() -> std::shared_ptr<const Module> {
    std::shared_ptr<Module> m = parse(file, diags);
    diags.throw_if_any();
    if (m->functions.empty()) {
      throw Error(filename + ": error: no function definition (def) found");
    }
    return m;
  });
}

std::vector<FunctionInfo> functions(const Module& m) {
  Diagnostics diags(m.file);
  return guarded("functions", diags, [&] { return functions_impl(m); });
}

std::unique_ptr<ir::Graph> lower_function(const Module& m, const std::string& fn,
                                          const std::vector<ArgBinding>& args) {
  Diagnostics diags(m.file);
  return guarded("lower_function", diags, [&] { return lower_function_impl(m, fn, args, diags); });
}

}  // namespace kiln::frontend
