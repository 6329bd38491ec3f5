//! `shape_struct!`: a struct with a `Shape`, without a proc macro.

/// Defines a struct with a `Shape`: its schema (an object whose fields
/// are properties, required unless they are `Option`s), its decoder and
/// its encoder. A field's JSON name is its own, or the string after `=>`:
///
/// ```ignore
/// skein::shape_struct! {
///     #[derive(Clone, Debug, PartialEq)]
///     pub struct Decision {
///         pub approved: bool,
///         pub by: String,
///         pub note: Option<String> => "comment",
///     }
/// }
/// ```
#[macro_export]
macro_rules! shape_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty $(=> $json:literal)? ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty ),*
        }

        impl $crate::Shape for $name {
            fn schema() -> $crate::Schema {
                $crate::Schema::object(vec![$(
                    ($crate::shape_struct!(@name $field $($json)?), <$ty as $crate::Shape>::schema(),
                     <$ty as $crate::Shape>::missing().is_none()),
                )*])
            }
            fn read(__r: &mut $crate::Reader) -> ::std::result::Result<Self, $crate::Mismatch> {
                #[allow(non_camel_case_types)]
                struct __Slots { $( $field: ::std::option::Option<$ty> ),* }
                let mut __s = __Slots { $( $field: None ),* };
                if __r.kind()? != $crate::shape::Kind::Object {
                    return Err(__r.wrong_type("object"));
                }
                __r.object(|__r, __key| {
                    $( if __key == $crate::shape_struct!(@name $field $($json)?) {
                        __s.$field = Some(<$ty as $crate::Shape>::read(__r)?);
                        return Ok(());
                    } )*
                    __r.skip()
                })?;
                Ok($name { $(
                    $field: match __s.$field.take().or_else(<$ty as $crate::Shape>::missing) {
                        Some(v) => v,
                        None => return Err(__r.fail(format!("missing required property {:?}",
                            $crate::shape_struct!(@name $field $($json)?)))),
                    },
                )* })
            }
            fn write(&self, __out: &mut String) {
                __out.push('{');
                let mut __first = true;
                $(
                    if !__first { __out.push(','); }
                    __first = false;
                    __out.push_str(&$crate::json::quote($crate::shape_struct!(@name $field $($json)?)));
                    __out.push(':');
                    $crate::Shape::write(&self.$field, __out);
                )*
                let _ = __first;
                __out.push('}');
            }
        }
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $json:literal) => { $json };
}
