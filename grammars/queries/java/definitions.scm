; Java: methods and constructors, classes, records, interfaces, enums, annotations.
[(method_declaration name: (identifier) @name)
 (constructor_declaration name: (identifier) @name)
 (compact_constructor_declaration name: (identifier) @name)] @definition.method
[(class_declaration name: (identifier) @name)
 (record_declaration name: (identifier) @name)] @definition.class
[(interface_declaration name: (identifier) @name)
 (enum_declaration name: (identifier) @name)
 (annotation_type_declaration name: (identifier) @name)] @definition.type
(package_declaration [(identifier) (scoped_identifier)] @name) @definition.module
