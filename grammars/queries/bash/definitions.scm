; Bash: functions (`f() {...}` and `function f {...}`).
(function_definition name: (word) @name) @definition.function
