#include "exec/kernel_ir.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "exec/schedule_cache.hpp"

namespace kiln::detail {

DType compute_type(const Node& n, const DType* arg_types) {
  switch (n.info().kind) {
    // complex(re, im) computes in its complex result type.
    case OpKind::binary:
      return n.info().type_rule == TypeRule::to_complex ? n.dtype
                                                         : promote(arg_types[0], arg_types[1]);
    // Comparisons of one value (to_i32: sign, even) compute in the operand type, and so do the
    // parts of a complex value (abs, real, imag, angle).
    case OpKind::unary: {
      const TypeRule rule = n.info().type_rule;
      const bool parts = is_complex(arg_types[0]) &&
                         (rule == TypeRule::to_real || rule == TypeRule::to_real_float);
      return rule == TypeRule::to_i32 || parts ? arg_types[0] : arithmetic_type(n.dtype);
    }
    case OpKind::custom: return DType::f64;
    default: return arithmetic_type(n.dtype);
  }
}

void lower_kernel(const std::vector<Node*>& body, const std::vector<Node*>& stored,
                  const GraphStructure& structure, const DescribeLoad& describe, KernelIr& ir) {
  KernelIr* p = &ir;
  const std::unordered_set<const Node*> in_body(body.begin(), body.end());
  // A value is a fused node or a (node, view node) pair read from memory.
  using Value = std::pair<const Node*, const Node*>;
  auto value_of = [&](const NodePtr& input) -> Value {
    const Node* d = input.get();
    const Node* through = nullptr;
    if (!d->result && d->is_view()) {
      through = d;
      d = d->view_base.get();
    }
    if (in_body.count(d)) through = nullptr;  // fused values are read as computed
    return {d, through};
  };
  struct ValueHash {
    std::size_t operator()(const Value& v) const {
      return std::hash<const void*>()(v.first) * 31 + std::hash<const void*>()(v.second);
    }
  };
  std::unordered_map<Value, std::size_t, ValueHash> last_use;
  last_use.reserve(body.size() * 2);
  for (std::size_t i = 0; i < body.size(); ++i)
    for (const auto& in : body[i]->inputs) last_use[value_of(in)] = i;

  std::vector<int> free_registers;
  auto allocate = [&] {
    if (!free_registers.empty()) {
      const int r = free_registers.back();
      free_registers.pop_back();
      return r;
    }
    return p->registers++;
  };
  std::unordered_map<Value, std::pair<int, DType>, ValueHash> live;  // value -> (register, type)
  std::unordered_set<int> constant_registers;
  std::unordered_map<const Node*, std::size_t> step_of;  // fused node -> its instruction
  auto release_dead_inputs = [&](const Node* n, std::size_t i) {
    for (const auto& in : n->inputs) {
      const Value v = value_of(in);
      auto it = live.find(v);
      if (it != live.end() && last_use[v] == i) {
        if (!constant_registers.count(it->second.first))
          free_registers.push_back(it->second.first);
        live.erase(it);
      }
    }
  };
  for (std::size_t i = 0; i < body.size(); ++i) {
    const Node* n = body[i];
    const auto kept = std::find(stored.begin(), stored.end(), n);
    // An assign whose value is computed by a step of this kernel, read by nothing else and not
    // stored itself, is that step's value: the step writes where the assign is stored, and
    // neither a copy nor a read of the target is left (the optimisers' updates are such).
    if (n->op == Op::assign) {
      const Value v = value_of(n->inputs[1]);
      const auto producer = v.second == nullptr ? step_of.find(v.first) : step_of.end();
      const auto it = live.find(v);
      if (producer != step_of.end() && it != live.end() && last_use[v] == i &&
          value_of(n->inputs[0]) != v && it->second.second == arithmetic_type(n->dtype) &&
          p->code[producer->second].step.rounds_to == n->dtype &&
          p->code[producer->second].store < 0 &&
          // the kernel's own result is the last instruction's
          (n != body.back() || producer->second + 1 == p->code.size())) {
        const int value_register = it->second.first;
        live.erase(it);
        release_dead_inputs(n, i);
        if (kept != stored.end())
          p->code[producer->second].store = static_cast<int>(kept - stored.begin());
        live[{n, nullptr}] = {value_register, arithmetic_type(n->dtype)};
        step_of[n] = producer->second;
        continue;
      }
    }
    IrStep s;
    s.op = n->op;
    s.dtype = arithmetic_type(n->dtype);
    s.rounds_to = n->dtype;
    s.custom = n->attrs.custom;
    for (const auto& in : n->inputs) {
      const Value v = value_of(in);
      auto it = live.find(v);
      if (it == live.end()) {  // a value from memory: load it just before its first use
        IrInstruction load;
        load.load = static_cast<int>(p->loads.size());
        // A broadcast scalar gets a register of its own that no other value reuses, so it is
        // filled once per thread instead of once per chunk; a few of them, so that a long chain
        // of ops with constants still needs only a few registers.
        LoadFacts facts = describe(*v.first, v.second);
        const bool constant = facts.constant && constant_registers.size() < 16;
        p->loads.push_back({structure.slot(v.first), v.second ? structure.slot(v.second) : -1,
                            arithmetic_type(v.first->dtype), constant, std::move(facts.layer)});
        load.out = constant ? p->registers++ : allocate();
        if (constant) constant_registers.insert(load.out);
        p->code.push_back(std::move(load));
        it = live.emplace(v, std::pair{p->code.back().out, arithmetic_type(v.first->dtype)}).first;
      }
      s.args[s.arity] = it->second.first;
      s.arg_types[s.arity] = it->second.second;
      ++s.arity;
    }
    s.compute = compute_type(*n, s.arg_types);
    IrInstruction step;
    step.step = std::move(s);
    step.out = allocate();
    if (kept != stored.end()) step.store = static_cast<int>(kept - stored.begin());
    release_dead_inputs(n, i);  // values whose last reader is this step give their registers back
    live[{n, nullptr}] = {step.out, arithmetic_type(n->dtype)};
    step_of[n] = p->code.size();
    p->code.push_back(std::move(step));
  }
  p->result = live.at({body.back(), nullptr}).first;
}

}  // namespace kiln::detail
