;;; emacs_line_ends.el --- driven by test_line_ends.py  -*- lexical-binding: t; -*-
;; Batch Emacs with eglot and the real server on a file with mixed line ends
;; ($SCULPT_FIXTURE): Emacs decodes it as -unix, so every \r is a character
;; (^M). After replacements across it and typing after a ^M, sculpt's copy
;; of the document (sculpt/test/document) must equal the buffer.
(add-to-list 'load-path (getenv "SCULPT_EMACS_PLUGIN"))
(require 'eglot)
(require 'sculpt)
(defvar line-ends-failures 0)
(defun line-ends-check (ok what &optional got)
  (if ok (message "ok   %s" what)
    (setq line-ends-failures (1+ line-ends-failures))
    (message "FAIL %s%s" what (if got (format ": got %S" got) ""))))
(defun line-ends-wait (pred seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall pred)))
(setq sculpt-program (list (getenv "SCULPT_BIN") "lsp")
      sculpt-settings (list :modelPath (getenv "SCULPT_TEST_MODEL"))
      eglot-sync-connect 10
      eglot-autoshutdown nil)

(defun line-ends-same (what)
  (eglot--signal-textDocument/didChange)
  (accept-process-output nil 0.3)
  (let* ((d (jsonrpc-request (sculpt--server) :sculpt/test/document
                             (list :textDocument (eglot--TextDocumentIdentifier))))
         (text (plist-get d :text))
         (want (buffer-substring-no-properties (point-min) (point-max))))
    (line-ends-check (equal text want) (concat what ": sculpt has the buffer's text")
                     (list (length text) (length want)))))

(condition-case err
    (progn
      (find-file (getenv "SCULPT_FIXTURE"))
      (line-ends-check (eq (coding-system-eol-type buffer-file-coding-system) 0)
                       "decoded with unix line ends" buffer-file-coding-system)
      (apply #'eglot (eglot--guess-contact))
      (line-ends-check (line-ends-wait (lambda () (sculpt--server)) 10) "eglot started sculpt")
      (line-ends-check
       (line-ends-wait (lambda () (equal (plist-get sculpt-status :state) "ready")) 60)
       "model ready")
      (line-ends-same "opened")
      (goto-char (point-min))
      (while (search-forward "foo" nil t) (replace-match "quux"))
      (line-ends-same "a replacement on every line")
      (goto-char (point-min))
      (while (search-forward "quux(" nil t) (replace-match "q\nz("))
      (line-ends-same "a replacement that splits lines")
      (goto-char (point-min))
      (end-of-line)
      (insert "typed")
      (line-ends-same "typed after a ^M"))
  (error (line-ends-check nil "no error" err)))
(kill-emacs (if (= line-ends-failures 0) 0 1))
