"""The scopes of a candidate's Python module and what each name in them is bound to, in source
order: assignments, augmented assignments, `for` targets, imports, definitions, parameters, with
`global` and `nonlocal` followed. folding.py reads values through them
(docs/trust.md#fixes-that-defeat-the-tests-are-flagged).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ref:
    """A named object: a module or what a module holds, as a dotted path (`os._exit`,
    `builtins.eval`, `sys.modules`)."""
    path: str


@dataclass
class Binding:
    """What a name is bound to: an expression (an element of it for a `for` target), an
    augmented assignment, a module or its attribute (an import), or nothing known (None)."""
    expr: ast.expr | None = None
    operator: ast.operator | None = None
    element: bool = False
    ref: Ref | None = None
    in_loop: bool = False


@dataclass
class Scope:
    node: ast.AST
    parent: Scope | None
    is_class: bool = False
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    parameters: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)
LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)


class Scopes:
    """A module's scopes and its names' bindings, read once."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = Scope(tree, None)
        self.scope_of: dict[int, Scope] = {}
        self._collect(tree, self.module, in_loop=False)

    def _bind(self, scope: Scope, name: str, binding: Binding) -> None:
        if name in scope.declared_global:
            scope = self.module
        elif name in scope.declared_nonlocal:
            scope = self._enclosing_binder(scope, name) or scope
        scope.bindings.setdefault(name, []).append(binding)

    def _enclosing_binder(self, scope: Scope, name: str) -> Scope | None:
        outer = scope.parent
        while outer is not None and outer is not self.module:
            if not outer.is_class and (name in outer.bindings or name in outer.parameters):
                return outer
            outer = outer.parent
        return None

    def _bind_target(self, scope: Scope, target: ast.expr, binding: Binding) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, binding)
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = binding.expr
            paired = (isinstance(value, (ast.Tuple, ast.List)) and not binding.element
                      and binding.operator is None and len(value.elts) == len(target.elts)
                      and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts))
            for i, element in enumerate(target.elts):
                inner = element.value if isinstance(element, ast.Starred) else element
                self._bind_target(scope, inner, Binding(
                    value.elts[i] if paired and isinstance(value, (ast.Tuple, ast.List))
                    else None, in_loop=binding.in_loop))

    def _collect(self, node: ast.AST, scope: Scope, in_loop: bool) -> None:
        """Records each node's scope and each binding, in source order."""
        for child in ast.iter_child_nodes(node):
            self.scope_of[id(child)] = scope
            loop = in_loop or isinstance(node, LOOPS)
            if not isinstance(child, SCOPES):
                self._bindings_of(child, scope, loop)
                self._collect(child, scope, loop)
                continue
            inner = Scope(child, scope, is_class=isinstance(child, ast.ClassDef))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                arguments = child.args
                inner.parameters = {a.arg for a in (*arguments.posonlyargs, *arguments.args,
                                                    *arguments.kwonlyargs)}
                inner.parameters |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
            self._collect(child, inner, in_loop=False)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(scope, child.name, Binding(in_loop=loop))
            # Decorators, defaults and bases are read in the enclosing scope.
            outside: list[ast.AST] = [*getattr(child, "decorator_list", ())]
            if isinstance(child, ast.ClassDef):
                outside += [*child.bases, *child.keywords]
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                outside += [*child.args.defaults,
                            *(d for d in child.args.kw_defaults if d is not None)]
            for part in outside:
                for inside in ast.walk(part):
                    self.scope_of[id(inside)] = scope

    def _bindings_of(self, node: ast.AST, scope: Scope, in_loop: bool) -> None:
        # Python refuses a global or nonlocal declaration after a binding of the name, so
        # in source order each declaration comes before the bindings it redirects.
        if isinstance(node, ast.Global):
            scope.declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.declared_nonlocal.update(node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(scope, target, Binding(node.value, in_loop=in_loop))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self._bind_target(scope, node.target, Binding(node.value, in_loop=in_loop))
        elif isinstance(node, ast.AugAssign):
            self._bind_target(scope, node.target,
                              Binding(node.value, operator=node.op, in_loop=in_loop))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind_target(scope, node.target, Binding(node.iter, element=True,
                                                          in_loop=True))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind(scope, alias.asname, Binding(ref=Ref(alias.name)))
                else:
                    top = alias.name.split(".")[0]
                    self._bind(scope, top, Binding(ref=Ref(top)))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    ref = Ref(f"{node.module}.{alias.name}") if node.module and not node.level \
                        else None
                    self._bind(scope, alias.asname or alias.name, Binding(ref=ref))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_target(scope, item.optional_vars, Binding())
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, Binding())
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self._bind(scope, node.name, Binding())
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self._bind(scope, node.rest, Binding())

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """The scope a name read in `scope` is bound in and its bindings; None for a builtin
        or a name bound nowhere."""
        here: Scope | None = scope
        if name in scope.declared_global:
            here = self.module
        first = True
        while here is not None:
            visible = first or not here.is_class
            if visible and (name in here.bindings or name in here.parameters):
                return here, here.bindings.get(name, [])
            first = False
            here = here.parent
        return None

    def reads_parameters(self, node: ast.expr) -> bool:
        """Whether `node`'s value derives from a parameter of a function around it (what the
        tests pass in), through the bindings of the names it reads."""
        seen: set[tuple[int, str]] = set()
        pending: list[ast.expr] = [node]
        while pending:
            for name in (n for n in ast.walk(pending.pop()) if isinstance(n, ast.Name)):
                found = self.lookup(name.id, self.scope_of.get(id(name), self.module))
                if found is None or (id(found[0]), name.id) in seen:
                    continue
                seen.add((id(found[0]), name.id))
                if name.id in found[0].parameters:
                    return True
                pending.extend(b.expr for b in found[1] if b.expr is not None)
        return False
