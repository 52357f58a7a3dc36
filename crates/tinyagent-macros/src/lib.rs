//! The `#[tool]` attribute of [tinyagent](https://docs.rs/tinyagent): an `async fn` becomes a
//! tool. Use it through `tinyagent::tool` (the `macros` feature, on by default); the generated
//! code names `::tinyagent` paths only, so a crate using it needs no direct dependency on
//! serde or schemars.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, ReturnType, Signature,
    Type, parse_macro_input,
};

/// Makes an `async fn` a tool; see the `tinyagent::tool` documentation for the full story.
///
/// The fn stays as written and callable; next to it, `{fn}_tool()` returns the tool. The doc
/// comment is the description, the parameters are the input (each a property of the input
/// object, described by `#[arg(description = "...")]` or its doc comment), and one parameter
/// of type `ToolContext` (anywhere) gets the call's context.
///
/// Attribute arguments: `name = "..."` (default: the fn's name), `description = "..."`
/// (default: the doc comment), and the hints `read_only`, `idempotent`, `destructive = bool`,
/// `open_world = bool`, `blocking`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemFn);
    let mut options = ToolOptions::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    let expanded = parser
        .parse(attr)
        .and_then(|()| expand(options, item.clone()));
    match expanded {
        Ok(tokens) => tokens.into(),
        Err(err) => {
            // The fn is kept (without the attributes only #[tool] understands), so that the
            // error above is the only one.
            let mut fallback = item;
            for arg in fallback.sig.inputs.iter_mut() {
                if let FnArg::Typed(t) = arg {
                    t.attrs.retain(|a| {
                        !(a.path().is_ident("arg")
                            || a.path().is_ident("doc")
                            || a.path().is_ident("serde")
                            || a.path().is_ident("schemars"))
                    });
                }
            }
            let error = err.to_compile_error();
            quote!(#error #fallback).into()
        }
    }
}

#[derive(Default)]
struct ToolOptions {
    name: Option<LitStr>,
    description: Option<LitStr>,
    read_only: bool,
    idempotent: Option<bool>,
    destructive: Option<bool>,
    open_world: Option<bool>,
    blocking: bool,
}

impl ToolOptions {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let flag = |meta: &syn::meta::ParseNestedMeta<'_>| -> syn::Result<bool> {
            if meta.input.peek(syn::Token![=]) {
                Ok(meta.value()?.parse::<syn::LitBool>()?.value)
            } else {
                Ok(true)
            }
        };
        if meta.path.is_ident("name") {
            let name: LitStr = meta.value()?.parse()?;
            check_tool_name(&name)?;
            self.name = Some(name);
        } else if meta.path.is_ident("description") {
            let description: LitStr = meta.value()?.parse()?;
            if description.value().trim().is_empty() {
                return Err(syn::Error::new(
                    description.span(),
                    "a tool's description must not be empty: the model reads it to decide when to call the tool",
                ));
            }
            self.description = Some(description);
        } else if meta.path.is_ident("read_only") {
            self.read_only = flag(&meta)?;
        } else if meta.path.is_ident("idempotent") {
            self.idempotent = Some(flag(&meta)?);
        } else if meta.path.is_ident("destructive") {
            self.destructive = Some(flag(&meta)?);
        } else if meta.path.is_ident("open_world") {
            self.open_world = Some(flag(&meta)?);
        } else if meta.path.is_ident("blocking") {
            self.blocking = flag(&meta)?;
        } else {
            return Err(meta.error(
                "unknown #[tool] argument; expected `name = \"...\"`, `description = \"...\"`, `read_only`, `idempotent`, `destructive = bool`, `open_world = bool` or `blocking`",
            ));
        }
        Ok(())
    }
}

/// The rule providers apply to tool names: `^[a-zA-Z0-9_-]{1,64}$`.
fn check_tool_name(name: &LitStr) -> syn::Result<()> {
    let value = name.value();
    if value.is_empty() || value.len() > 64 {
        return Err(syn::Error::new(
            name.span(),
            "a tool name is 1 to 64 characters long",
        ));
    }
    if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(syn::Error::new(
            name.span(),
            format!("{bad:?} is not allowed in a tool name (allowed: a-z, A-Z, 0-9, '_' and '-')"),
        ));
    }
    Ok(())
}

/// The text of the `#[doc = "..."]` attributes (doc comments), lines joined, common
/// indentation of one space removed, trimmed.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// One parameter of the tool fn.
enum Param {
    /// The `ToolContext` parameter.
    Context,
    /// A field of the input.
    Field {
        ident: Ident,
        ty: Box<Type>,
        /// `#[serde(..)]` and `#[schemars(..)]` attributes, moved to the field.
        passthrough: Vec<Attribute>,
        description: Option<String>,
    },
}

fn is_tool_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_empty()),
        _ => false,
    }
}

fn parse_param(arg: &mut FnArg) -> syn::Result<Param> {
    let typed = match arg {
        FnArg::Receiver(r) => {
            return Err(syn::Error::new(
                r.span(),
                "#[tool] goes on a free async fn, not a method: move the fn out of the impl block, and pass what `self` held through a captured value or the `ToolContext`'s extensions",
            ));
        }
        FnArg::Typed(t) => t,
    };
    let mut description = None;
    let mut passthrough = Vec::new();
    let mut docs = Vec::new();
    for attr in std::mem::take(&mut typed.attrs) {
        if attr.path().is_ident("arg") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("description") {
                    let text: LitStr = meta.value()?.parse()?;
                    description = Some(text.value());
                    Ok(())
                } else {
                    Err(meta.error("unknown #[arg] argument; expected `description = \"...\"`"))
                }
            })?;
        } else if attr.path().is_ident("doc") {
            docs.push(attr);
        } else if attr.path().is_ident("serde") || attr.path().is_ident("schemars") {
            passthrough.push(attr);
        } else {
            typed.attrs.push(attr);
        }
    }
    if description.is_none() {
        description = doc_text(&docs);
    }
    if is_tool_context(&typed.ty) {
        return Ok(Param::Context);
    }
    let ident = match &*typed.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "a #[tool] parameter is a plain name (`city: String`): its name is the name of the input's property",
            ));
        }
    };
    Ok(Param::Field {
        ident,
        ty: typed.ty.clone(),
        passthrough,
        description,
    })
}

fn expand(options: ToolOptions, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let ret_ty = check_signature(&item.sig)?;
    let fn_ident = item.sig.ident.clone();
    let description = tool_description(&options, &item)?;
    let name = tool_name(&options, &item.sig.ident)?;
    let params = parse_params(&mut item)?;

    let vis = &item.vis;
    let args_ident = format_ident!("__{}_tool_args", fn_ident);
    let ctor_ident = format_ident!("{}_tool", fn_ident);
    let fields = params.iter().filter_map(|p| match p {
        Param::Field {
            ident,
            ty,
            passthrough,
            description,
        } => {
            let doc = description.as_ref().map(|d| quote!(#[doc = #d]));
            Some(quote! { #doc #(#passthrough)* #ident: #ty })
        }
        Param::Context => None,
    });
    let call_args = params.iter().map(|p| match p {
        Param::Field { ident, .. } => quote!(__args.#ident),
        Param::Context => quote!(__ctx),
    });
    let hints = hints(&options);
    let into_result = quote_spanned! {ret_ty.span()=>
        ::tinyagent::__macro_support::into_tool_result(__returned)
    };
    let ctor_doc = format!(
        "The tool `{name}`, made by `#[tool]` from [`{fn_ident}`]: {}",
        description.lines().next().unwrap_or_default()
    );

    Ok(quote! {
        #item

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #[derive(::tinyagent::serde::Deserialize, ::tinyagent::schemars::JsonSchema)]
        #[serde(crate = "::tinyagent::serde")]
        #[schemars(crate = "::tinyagent::schemars")]
        #vis struct #args_ident {
            #(#fields,)*
        }

        #[doc = #ctor_doc]
        #[must_use]
        #vis fn #ctor_ident() -> ::tinyagent::tools::FuncTool<impl ::tinyagent::Handler> {
            ::tinyagent::__macro_support::tool_from_parts(
                #name,
                #description,
                #hints,
                |__ctx: ::tinyagent::ToolContext, __args: #args_ident| async move {
                    let _ = &__ctx;
                    let __returned = #fn_ident(#(#call_args),*).await;
                    #into_result
                },
            )
        }
    })
}

/// What a tool fn must be: `async`, neither generic nor variadic, returning a value; its
/// return type.
fn check_signature(sig: &Signature) -> syn::Result<Type> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "#[tool] needs an `async fn`: a tool runs as a future (write `async fn`, and move blocking work into `tokio::task::spawn_blocking` or mark the tool `blocking`)",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[tool] fn cannot be generic: its input schema is made from concrete parameter types",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "a #[tool] fn cannot be variadic",
        ));
    }
    match &sig.output {
        ReturnType::Type(_, ty) => Ok((**ty).clone()),
        ReturnType::Default => Err(syn::Error::new(
            sig.ident.span(),
            "a #[tool] fn returns `Result<T, E>`: `T` is the result (text, or any `Serialize` value) and `E` the error the model reads",
        )),
    }
}

/// The tool's description: `description = "..."`, else the fn's doc comment; one of them
/// is required.
fn tool_description(options: &ToolOptions, item: &ItemFn) -> syn::Result<String> {
    let fn_ident = &item.sig.ident;
    match (&options.description, doc_text(&item.attrs)) {
        (Some(d), _) => Ok(d.value()),
        (None, Some(doc)) => Ok(doc),
        (None, None) => Err(syn::Error::new(
            fn_ident.span(),
            format!(
                "tool `{fn_ident}` has no description: the model reads it to decide when to call the tool; write a doc comment (`/// What it does`) above the fn or `#[tool(description = \"...\")]`"
            ),
        )),
    }
}

/// The tool's name: `name = "..."` (checked when parsed), else the fn's, checked here.
fn tool_name(options: &ToolOptions, fn_ident: &Ident) -> syn::Result<String> {
    let name = options
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| fn_ident.to_string());
    if options.name.is_none() {
        check_tool_name(&LitStr::new(&name, fn_ident.span()))?;
    }
    Ok(name)
}

/// The fn's parameters, their `#[tool]` attributes taken off; at most one is the
/// `ToolContext`.
fn parse_params(item: &mut ItemFn) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    let mut context_seen: Option<Span> = None;
    for arg in item.sig.inputs.iter_mut() {
        let span = arg.span();
        let param = parse_param(arg)?;
        if matches!(param, Param::Context) {
            if context_seen.is_some() {
                return Err(syn::Error::new(
                    span,
                    "a #[tool] fn takes at most one `ToolContext`",
                ));
            }
            context_seen = Some(span);
        }
        params.push(param);
    }
    Ok(params)
}

/// The tool's hints: read-only or the default, then each hint given.
fn hints(options: &ToolOptions) -> TokenStream2 {
    let mut hints = if options.read_only {
        quote!(::tinyagent::ToolHints::READ_ONLY)
    } else {
        quote!(::tinyagent::ToolHints::default())
    };
    if let Some(i) = options.idempotent {
        hints = quote!(#hints.idempotent(#i));
    }
    if let Some(d) = options.destructive {
        hints = quote!(#hints.destructive(#d));
    }
    if let Some(o) = options.open_world {
        hints = quote!(#hints.open_world(#o));
    }
    if options.blocking {
        hints = quote!(#hints.blocking(true));
    }
    hints
}
