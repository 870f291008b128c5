#pragma once
// Visitors over closed variants (model.h, Decision) are written as one lambda per alternative:
//   std::visit(Overloaded{[](const AdmitDecision& a) {...}, [](const PreemptDecision& p) {...}}, d);
// With no generic lambda among them, an alternative that gains a kind fails to compile until it is handled.
namespace allot {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace allot
