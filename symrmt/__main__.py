from symrmt.cli import main

raise SystemExit(main())
